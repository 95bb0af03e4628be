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
  type QueuedRequest,
  TERMINAL_CONVERSION_STATUSES,
  type WhiteboardEvent,
} from "../../services/ports.js";
import { type Fields, parseMillis } from "./channel-records.js";

/** The hash field that marks a task's terminal state as announced on its channel. */
export const ANNOUNCED_FIELD = "announced";

/** The hash field of a queued task's resource URL, sealed at rest (it may carry a signed URL's credentials). */
export const RESOURCE_FIELD = "resource";

/** Opens a sealed field of the project's record (src/secrets/sealed-fields.ts); throws when it cannot. */
export type OpenField = (project: string, field: string, stored: string) => string;

/** The fields a state of the task sets (optional ones only when known). */
export type ProgressFields = Pick<
  ConversionTaskRecord,
  "status" | "percent" | "pageCount" | "pages" | "prefix" | "failedReason"
>;

export function isTerminalStatus(status: string): boolean {
  return (TERMINAL_CONVERSION_STATUSES as readonly string[]).includes(status);
}

/** The whole record of a new task; `sealedResource` is the queued request's URL as sealed for the record. */
export function conversionFields(task: ConversionTaskRecord, sealedResource?: string): Fields {
  const { request } = task;
  return {
    project: task.project,
    channel: task.channel,
    type: task.type,
    api: task.api,
    ...progressFields(task),
    created_at: String(task.createdAt),
    updated_at: String(task.updatedAt),
    by: task.by,
    ...(task.backendUuid === undefined ? {} : { backend_uuid: task.backendUuid }),
    ...(task.submittedAt === undefined ? {} : { submitted_at: String(task.submittedAt) }),
    ...(sealedResource === undefined ? {} : { [RESOURCE_FIELD]: sealedResource }),
    ...(request?.scale === undefined ? {} : { scale: String(request.scale) }),
    ...(request?.reuseKey === undefined ? {} : { reuse_key: request.reuseKey }),
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

/**
 * The record, or undefined when its required fields are unusable. The queued
 * request is read only with `open` (a record read for its state needs none),
 * and only when its URL opens.
 */
export function parseConversion(uuid: string, fields: Fields, open?: OpenField): ConversionTaskRecord | undefined {
  const { project, channel, type, status, by } = fields;
  const createdAt = parseMillis(fields.created_at);
  if (!project || !channel || status === undefined || by === undefined || createdAt === undefined) return undefined;
  if (type !== "static" && type !== "dynamic") return undefined;
  const api = parseApi(fields.api);
  if (api === undefined) return undefined;
  const pageCount = parseCount(fields.page_count);
  const submittedAt = parseMillis(fields.submitted_at);
  const attempts = parseCount(fields.attempts);
  const request = open === undefined ? undefined : parseRequest(project, fields, open);
  return {
    uuid,
    // Every queued request's record has a reuse key; one without is older than the queue, and its id is the backend's.
    ...(fields.backend_uuid
      ? { backendUuid: fields.backend_uuid }
      : fields.reuse_key === undefined
        ? { backendUuid: uuid }
        : {}),
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
    ...(request === undefined ? {} : { request }),
    ...(submittedAt === undefined ? {} : { submittedAt }),
    ...(attempts === undefined ? {} : { attempts }),
  };
}

/** The queued request of a record; undefined without a resource, or when it does not open. */
function parseRequest(project: string, fields: Fields, open: OpenField): QueuedRequest | undefined {
  const stored = fields[RESOURCE_FIELD];
  if (stored === undefined || stored === "") return undefined;
  let resourceUrl: string;
  try {
    resourceUrl = open(project, RESOURCE_FIELD, stored);
  } catch {
    return undefined;
  }
  const scale = fields.scale === undefined ? undefined : Number(fields.scale);
  return {
    resourceUrl,
    ...(scale !== undefined && Number.isFinite(scale) ? { scale } : {}),
    ...(fields.reuse_key ? { reuseKey: fields.reuse_key } : {}),
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
