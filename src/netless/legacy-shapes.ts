/**
 * The answers of the backend's legacy conversion API, strict readers for
 * them, and the translation of a task's answer into our `ConversionState`.
 * Anything that does not match is `undefined`: the caller treats it as an
 * unreadable answer rather than passing half-understood data along.
 */
import type { ConversionPage, ConversionState, ConversionType } from "../services/ports.js";
import { isConversionType, isCount, isHttpUrl, isPercentage, isRecord, isUuid, parseObject } from "./json-values.js";

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
export function parseLegacyCreated(
  text: string,
): { readonly uuid: string; readonly type: ConversionType; readonly status: TaskStatus } | undefined {
  const value = parseObject(text);
  if (value === undefined) return undefined;
  const { uuid, type, status } = value;
  if (!isUuid(uuid) || !isConversionType(type) || !isTaskStatus(status)) return undefined;
  return { uuid, type, status };
}

/** The answer to GET …/tasks/{uuid}?type=…. */
export function parseLegacyTask(text: string): ConversionTaskStatus | undefined {
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

/**
 * The task in our shape. Static pages are the converted files in order
 * (pages 1..n); dynamic ones are listed only when the backend made previews.
 * Undefined when a page URL is not an http(s) URL.
 */
export function legacyState(task: ConversionTaskStatus): ConversionState | undefined {
  const progress = task.progress;
  const files = progress?.convertedFileList ?? [];
  const pages = task.type === "static" ? staticPages(files) : dynamicPages(files);
  if (pages === undefined) return undefined;
  const percent = progress?.convertedPercentage ?? (task.status === "Finished" ? 100 : 0);
  const prefix = task.type === "dynamic" ? dynamicPrefix(files, task.uuid) : undefined;
  return {
    status: task.status,
    percent,
    ...(progress === undefined ? {} : { pageCount: progress.totalPageSize }),
    pages,
    ...(prefix === undefined ? {} : { prefix }),
    ...(task.failedReason === undefined ? {} : { failedReason: task.failedReason }),
  };
}

function staticPages(files: readonly ConvertedFile[]): ConversionPage[] | undefined {
  const pages: ConversionPage[] = [];
  for (const [i, file] of files.entries()) {
    if (!isHttpUrl(file.conversionFileUrl)) return undefined;
    pages.push({ page: i + 1, url: file.conversionFileUrl, width: file.width, height: file.height });
  }
  return pages;
}

function dynamicPages(files: readonly ConvertedFile[]): ConversionPage[] | undefined {
  const pages: ConversionPage[] = [];
  for (const [i, file] of files.entries()) {
    if (file.preview === undefined) continue;
    if (!isHttpUrl(file.preview)) return undefined;
    pages.push({ page: i + 1, previewUrl: file.preview });
  }
  return pages;
}

/**
 * Dynamic files are named `pptx://{host}/{path…}/dynamicConvert/{uuid}/{n}.slide`;
 * the prefix the whiteboard SDKs want is `https://{host}/{path…}/dynamicConvert`,
 * the same as the projector API's `prefix`. Undefined when no file has that form.
 */
function dynamicPrefix(files: readonly ConvertedFile[], uuid: string): string | undefined {
  const match = /^pptx?:\/\/(\S+?\/dynamicConvert)\/([^/]+)\//.exec(files[0]?.conversionFileUrl ?? "");
  if (match === null || match[2] !== uuid) return undefined;
  const prefix = `https://${match[1]}`;
  return isHttpUrl(prefix) ? prefix : undefined;
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

export function isTaskStatus(value: unknown): value is TaskStatus {
  return typeof value === "string" && (TASK_STATUSES as readonly string[]).includes(value);
}
