/**
 * Field layout of a conversion task's records (docs/redis-schema.md): the task hash, its changes stream and the channel's
 * whiteboard-events stream, shared by the Redis and the in-memory store.
 * Records written before the follower existed lack the newer fields; they read
 * with defaults. A record whose required fields are unusable reads as absent.
 */
import {
  type ConversionApi,
  type ConversionChange,
  type ConversionPage,
  type ConversionState,
  type ConversionTaskRecord,
  TERMINAL_CONVERSION_STATUSES,
  type WhiteboardEvent,
} from "../../services/ports.js";
import { type Fields, parseMillis } from "./channel-records.js";

/** The hash field that marks a task's terminal state as announced on its channel. */
export const ANNOUNCED_FIELD = "announced";

/** The fields a state of the task sets (optional ones only when known). */
export type ProgressFields = Pick<
  ConversionTaskRecord,
  "status" | "percent" | "pageCount" | "pages" | "prefix" | "failedReason"
>;

export function isTerminalStatus(status: string): boolean {
  return (TERMINAL_CONVERSION_STATUSES as readonly string[]).includes(status);
}

/** The whole record of a new task. */
export function conversionFields(task: ConversionTaskRecord): Fields {
  return {
    project: task.project,
    channel: task.channel,
    type: task.type,
    api: task.api,
    ...progressFields(task),
    created_at: String(task.createdAt),
    updated_at: String(task.updatedAt),
    by: task.by,
  };
}

/** The record fields of a state: status, percent and pages always, the others when known. */
export function progressFields(state: ProgressFields | ConversionState): Fields {
  return {
    status: state.status,
    percent: String(state.percent),
    pages: pagesJson(state.pages),
    ...(state.pageCount === undefined ? {} : { page_count: String(state.pageCount) }),
    ...(state.prefix === undefined ? {} : { prefix: state.prefix }),
    ...(state.failedReason === undefined ? {} : { failed_reason: state.failedReason }),
  };
}

export function parseConversion(uuid: string, fields: Fields): ConversionTaskRecord | undefined {
  const { project, channel, type, status, by } = fields;
  const createdAt = parseMillis(fields.created_at);
  if (!project || !channel || status === undefined || by === undefined || createdAt === undefined) return undefined;
  if (type !== "static" && type !== "dynamic") return undefined;
  const api = parseApi(fields.api);
  if (api === undefined) return undefined;
  const pageCount = parseCount(fields.page_count);
  return {
    uuid,
    project,
    channel,
    type,
    api,
    status,
    percent: parsePercent(fields.percent) ?? (status === "Finished" ? 100 : 0),
    ...(pageCount === undefined ? {} : { pageCount }),
    pages: parsePages(fields.pages),
    ...(fields.prefix ? { prefix: fields.prefix } : {}),
    ...(fields.failed_reason ? { failedReason: fields.failed_reason } : {}),
    createdAt,
    updatedAt: parseMillis(fields.updated_at) ?? createdAt,
    by,
  };
}

/** Stream entry fields of a change, in the documented order. */
export function changeFields(status: string, percent: number, at: number): Fields {
  return { status, percent: String(percent), at: String(at) };
}

export function parseConversionChange(id: string, fields: Fields): ConversionChange | undefined {
  const percent = parsePercent(fields.percent);
  const at = parseMillis(fields.at);
  if (fields.status === undefined || percent === undefined || at === undefined) return undefined;
  return { id, status: fields.status, percent, at };
}

/** Stream entry fields of a task's end, in the documented order (`page_count` only when known). */
export function whiteboardEventFields(task: ConversionTaskRecord, status: string, at: number): Fields {
  return {
    task_uuid: task.uuid,
    status,
    type: task.type,
    ...(task.pageCount === undefined ? {} : { page_count: String(task.pageCount) }),
    by: task.by,
    at: String(at),
  };
}

export function parseWhiteboardEvent(id: string, fields: Fields): WhiteboardEvent | undefined {
  const { task_uuid: taskUuid, status, type, by } = fields;
  const at = parseMillis(fields.at);
  if (!taskUuid || status === undefined || by === undefined || at === undefined) return undefined;
  if (type !== "static" && type !== "dynamic") return undefined;
  const pageCount = parseCount(fields.page_count);
  return { id, taskUuid, status, type, ...(pageCount === undefined ? {} : { pageCount }), by, at };
}

/** Absent (records older than the follower) → legacy; any other value makes the record unusable. */
function parseApi(value: string | undefined): ConversionApi | undefined {
  if (value === undefined) return "legacy";
  return value === "projector" || value === "legacy" ? value : undefined;
}

function parsePercent(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d{1,3}(\.\d+)?$/.test(value)) return undefined;
  const n = Number(value);
  return n <= 100 ? n : undefined;
}

function parseCount(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d{1,9}$/.test(value)) return undefined;
  return Number(value);
}

/** Static pages as `{page,url,width,height}`, dynamic ones as `{page,preview_url}`. */
function pagesJson(pages: readonly ConversionPage[]): string {
  return JSON.stringify(
    pages.map((p) => ({
      page: p.page,
      ...(p.url === undefined ? {} : { url: p.url }),
      ...(p.width === undefined ? {} : { width: p.width }),
      ...(p.height === undefined ? {} : { height: p.height }),
      ...(p.previewUrl === undefined ? {} : { preview_url: p.previewUrl }),
    })),
  );
}

/** The pages of `pagesJson`; absent or anything unreadable → []. */
function parsePages(json: string | undefined): ConversionPage[] {
  if (json === undefined) return [];
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return [];
  }
  if (!Array.isArray(value)) return [];
  const pages: ConversionPage[] = [];
  for (const item of value) {
    const page = parsePage(item);
    if (page === undefined) return [];
    pages.push(page);
  }
  return pages;
}

function parsePage(item: unknown): ConversionPage | undefined {
  if (typeof item !== "object" || item === null) return undefined;
  const { page, url, width, height, preview_url: previewUrl } = item as Record<string, unknown>;
  if (typeof page !== "number" || !Number.isInteger(page)) return undefined;
  if (!optionalString(url) || !optionalString(previewUrl)) return undefined;
  if (!optionalNumber(width) || !optionalNumber(height)) return undefined;
  return {
    page,
    ...(url === undefined ? {} : { url }),
    ...(width === undefined ? {} : { width }),
    ...(height === undefined ? {} : { height }),
    ...(previewUrl === undefined ? {} : { previewUrl }),
  };
}

function optionalString(value: unknown): value is string | undefined {
  return value === undefined || typeof value === "string";
}

function optionalNumber(value: unknown): value is number | undefined {
  return value === undefined || (typeof value === "number" && Number.isFinite(value));
}
