/**
 * The shapes of the conversion backend's answers, and strict readers for them.
 * Anything that does not match is `undefined`: the caller treats it as an
 * unreadable answer rather than passing half-understood data along.
 */
import type { ConversionTask, ConversionType } from "../services/ports.js";

export const TASK_STATUSES = ["Waiting", "Converting", "Finished", "Fail"] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export interface ConvertedFile {
  readonly width: number;
  readonly height: number;
  readonly conversionFileUrl: string;
  /** Only for dynamic conversions asked with `preview: true`. */
  readonly preview?: string;
}

export interface ConversionProgress {
  readonly totalPageSize: number;
  readonly convertedPageSize: number;
  readonly convertedPercentage: number;
  readonly convertedFileList: readonly ConvertedFile[];
  /** Dynamic conversions only: Extracting | Packaging | GeneratingPreview | MediaTranscode. */
  readonly currentStep?: string;
}

export interface ConversionTaskStatus {
  readonly uuid: string;
  readonly type: ConversionType;
  readonly status: TaskStatus;
  /** Only when `status` is `Fail`. */
  readonly failedReason?: string;
  readonly progress?: ConversionProgress;
}

/** The answer to POST …/tasks: `{uuid, type, status}`. */
export function parseCreatedTask(text: string): ConversionTask | undefined {
  const value = parseObject(text);
  if (value === undefined) return undefined;
  const { uuid, type, status } = value;
  if (!isUuid(uuid) || !isConversionType(type) || !isTaskStatus(status)) return undefined;
  return { uuid, type, status };
}

/** The answer to GET …/tasks/{uuid}?type=…. */
export function parseTaskStatus(text: string): ConversionTaskStatus | undefined {
  const value = parseObject(text);
  if (value === undefined) return undefined;
  const { uuid, type, status, failedReason, progress } = value;
  if (!isUuid(uuid) || !isConversionType(type) || !isTaskStatus(status)) return undefined;
  if (failedReason !== undefined && typeof failedReason !== "string") return undefined;
  const parsedProgress = progress === undefined || progress === null ? undefined : readProgress(progress);
  if (parsedProgress === null) return undefined;
  return {
    uuid,
    type,
    status,
    ...(typeof failedReason === "string" ? { failedReason } : {}),
    ...(parsedProgress === undefined ? {} : { progress: parsedProgress }),
  };
}

/** `null` when present but malformed. */
function readProgress(value: unknown): ConversionProgress | null {
  if (!isRecord(value)) return null;
  const { totalPageSize, convertedPageSize, convertedPercentage, convertedFileList, currentStep } = value;
  if (!isCount(totalPageSize) || !isCount(convertedPageSize) || !isPercentage(convertedPercentage)) return null;
  if (currentStep !== undefined && typeof currentStep !== "string") return null;
  const files: ConvertedFile[] = [];
  if (convertedFileList !== undefined) {
    if (!Array.isArray(convertedFileList)) return null;
    for (const item of convertedFileList) {
      const file = readFile(item);
      if (file === undefined) return null;
      files.push(file);
    }
  }
  return {
    totalPageSize,
    convertedPageSize,
    convertedPercentage,
    convertedFileList: files,
    ...(currentStep === undefined ? {} : { currentStep }),
  };
}

function readFile(value: unknown): ConvertedFile | undefined {
  if (!isRecord(value)) return undefined;
  const { width, height, conversionFileUrl, preview } = value;
  if (!isCount(width) || !isCount(height) || typeof conversionFileUrl !== "string") return undefined;
  if (preview !== undefined && typeof preview !== "string") return undefined;
  return { width, height, conversionFileUrl, ...(preview === undefined ? {} : { preview }) };
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Non-empty, bounded, and safe to use as a path segment and a Redis key part. */
function isUuid(value: unknown): value is string {
  return typeof value === "string" && /^[A-Za-z0-9_-]{1,128}$/.test(value);
}

export function isConversionType(value: unknown): value is ConversionType {
  return value === "static" || value === "dynamic";
}

export function isTaskStatus(value: unknown): value is TaskStatus {
  return typeof value === "string" && (TASK_STATUSES as readonly string[]).includes(value);
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

function isPercentage(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 && value <= 100;
}
