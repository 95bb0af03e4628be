/**
 * The answers of the backend's projector conversion API, read strictly into
 * our shapes. Anything that does not match is `undefined`: the caller treats
 * it as an unreadable answer rather than passing half-understood data along.
 *
 *   create → {uuid, type?, status}
 *   query, cancel → {uuid, type, status, convertedPercentage, pageCount, prefix,
 *                    images: {"<page>": {width, height, url}}, previews: {"<page>": url},
 *                    note, errorCode, errorMessage}
 */
import type { ConversionPage, ConversionState, ConversionStatus, ConversionType } from "../services/ports.js";
import { isConversionType, isCount, isHttpUrl, isRecord, isUuid, parseObject } from "./json-values.js";

const STATUSES: readonly ConversionStatus[] = ["Waiting", "Converting", "Finished", "Fail", "Abort"];

export interface ProjectorCreated {
  readonly uuid: string;
  /** The docs leave it out of the create answer; when present it must match the request. */
  readonly type?: ConversionType;
  readonly status: ConversionStatus;
}

/** The answer to POST …/projector/tasks. */
export function parseProjectorCreated(text: string): ProjectorCreated | undefined {
  const value = parseObject(text);
  if (value === undefined) return undefined;
  const { uuid, type, status } = value;
  if (!isUuid(uuid) || !isStatus(status)) return undefined;
  if (type !== undefined && !isConversionType(type)) return undefined;
  return { uuid, status, ...(type === undefined ? {} : { type }) };
}

/** The answer to GET (or DELETE) …/projector/tasks/{uuid}. */
export function parseProjectorState(text: string): ConversionState | undefined {
  const value = parseObject(text);
  if (value === undefined) return undefined;
  const { uuid, type, status, convertedPercentage, pageCount, prefix } = value;
  if (!isStatus(status)) return undefined;
  if ((uuid !== undefined && !isUuid(uuid)) || (type !== undefined && !isConversionType(type))) return undefined;
  if (!isAbsent(pageCount) && !isCount(pageCount)) return undefined;
  const percent = readPercent(convertedPercentage, status);
  const readPrefix = isAbsent(prefix) || prefix === "" ? undefined : prefix;
  if (readPrefix !== undefined && !isHttpUrl(readPrefix)) return undefined;
  const pages = readPages(value.images, value.previews);
  const failedReason = status === "Fail" ? describeError(value.errorCode, value.errorMessage) : undefined;
  if (percent === undefined || pages === undefined || failedReason === null) return undefined;
  return {
    status,
    percent,
    ...(isCount(pageCount) ? { pageCount } : {}),
    pages,
    ...(readPrefix === undefined ? {} : { prefix: readPrefix }),
    ...(failedReason === undefined ? {} : { failedReason }),
  };
}

/** The cancel answer the docs show instead of a task (`{taskId, success}`), or undefined for anything else. */
export function parseCancelAcknowledgement(text: string): { readonly success: boolean } | undefined {
  const value = parseObject(text);
  if (value === undefined || value.status !== undefined || typeof value.success !== "boolean") return undefined;
  return { success: value.success };
}

/** `convertedPercentage` kept within 0–100 (when absent: 100 for a finished task, else 0); undefined when no number. */
function readPercent(value: unknown, status: ConversionStatus): number | undefined {
  if (isAbsent(value)) return status === "Finished" ? 100 : 0;
  if (typeof value !== "number" || !Number.isFinite(value)) return undefined;
  return Math.min(100, Math.max(0, value));
}

/** Static `images` and dynamic `previews`, merged by page number and sorted; undefined when malformed. */
function readPages(images: unknown, previews: unknown): ConversionPage[] | undefined {
  if (!(isAbsent(images) || isRecord(images)) || !(isAbsent(previews) || isRecord(previews))) return undefined;
  const pages = new Map<number, ConversionPage>();
  for (const [page, image] of entries(images)) {
    const read = readImage(image);
    if (page === undefined || read === undefined) return undefined;
    pages.set(page, { page, ...read });
  }
  for (const [page, preview] of entries(previews)) {
    if (page === undefined || !isHttpUrl(preview)) return undefined;
    pages.set(page, { ...(pages.get(page) ?? { page }), previewUrl: preview });
  }
  return [...pages.values()].sort((a, b) => a.page - b.page);
}

/** `{width, height, url}` (the sizes are optional), or the bare URL some answers give. */
function readImage(value: unknown): Omit<ConversionPage, "page"> | undefined {
  if (isHttpUrl(value)) return { url: value };
  if (!isRecord(value) || !isHttpUrl(value.url)) return undefined;
  const { url, width, height } = value;
  if ((width !== undefined && !isCount(width)) || (height !== undefined && !isCount(height))) return undefined;
  return { url, ...(width === undefined ? {} : { width }), ...(height === undefined ? {} : { height }) };
}

/** The entries of a `{"<page>": …}` map, each key read as a page number (undefined when it is none). */
function entries(map: unknown): [number | undefined, unknown][] {
  if (!isRecord(map)) return [];
  return Object.entries(map).map(([key, value]) => [/^[1-9][0-9]{0,5}$/.test(key) ? Number(key) : undefined, value]);
}

/** "message (error code)" from a failed task's fields; undefined when it has neither, null when malformed. */
function describeError(code: unknown, message: unknown): string | undefined | null {
  if (!isAbsent(code) && typeof code !== "string" && typeof code !== "number") return null;
  if (!isAbsent(message) && typeof message !== "string") return null;
  const codeText = typeof code === "number" || (typeof code === "string" && code !== "") ? `error ${code}` : undefined;
  const messageText = typeof message === "string" && message !== "" ? message : undefined;
  if (messageText !== undefined && codeText !== undefined) return `${messageText} (${codeText})`;
  return messageText ?? codeText;
}

function isStatus(value: unknown): value is ConversionStatus {
  return typeof value === "string" && (STATUSES as readonly string[]).includes(value);
}

function isAbsent(value: unknown): boolean {
  return value === undefined || value === null;
}
