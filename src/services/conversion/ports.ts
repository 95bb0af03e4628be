/**
 * The conversion half of the ports (src/services/ports.ts re-exports all of
 * it): the tasks as the store keeps and shares them between the followers of
 * every instance, and the Netless conversion backend. Adapters report trouble
 * by throwing `Failure`, as ports.ts describes.
 */
import { Failure } from "../failure.js";

export const REGIONS = ["us-sv", "sg", "in-mum", "eu", "cn-hz"] as const;
export type Region = (typeof REGIONS)[number];

export type WhiteboardCredentials =
  | { readonly sdkToken: string }
  | { readonly accessKey: string; readonly secretKey: string };

export interface WhiteboardSettings {
  readonly region: Region;
  readonly credentials: WhiteboardCredentials;
  /**
   * Conversion (create) requests per second the Netless backend takes from
   * the project, as its plan allows; absent → 1, the backend's default plan.
   */
  readonly conversionQps?: number;
}

export type ConversionType = "static" | "dynamic";

/**
 * A conversion task as the store keeps it, from its creation to its end
 * (docs/redis-schema.md). Records written before the follower
 * existed lack the newer fields and read with the defaults given here.
 */
export interface ConversionTaskRecord {
  /** boardline's id of the task; for records made before the queue, the backend's uuid. */
  readonly uuid: string;
  /** The backend's uuid once submitted; absent while queued (and in records made before the queue: `uuid`). */
  readonly backendUuid?: string;
  readonly project: string;
  readonly channel: string;
  readonly type: ConversionType;
  /** The API the task was created on; absent in old records → "legacy"; while queued, the API it is meant for. */
  readonly api: ConversionApi;
  /** As the backend said (old records may hold anything). */
  readonly status: ConversionStatus | string;
  /** 0–100; absent → 0 (100 when the status is Finished). */
  readonly percent: number;
  readonly pageCount?: number;
  /** Absent or unreadable → []. */
  readonly pages: readonly ConversionPage[];
  /** Dynamic conversions: where the converted files live. */
  readonly prefix?: string;
  readonly failedReason?: string;
  /** Milliseconds since the epoch. */
  readonly createdAt: number;
  /** Milliseconds since the epoch, of the last change; absent → createdAt. */
  readonly updatedAt: number;
  readonly by: string;
  /** The request, kept only while the task is queued (the store seals the URL at rest). */
  readonly request?: QueuedRequest;
  /** Milliseconds since the epoch of the submission to the backend; absent while queued (old records: createdAt). */
  readonly submittedAt?: number;
  /** How many times a submission was begun: more than one when an instance died with one under way. */
  readonly attempts?: number;
}

/** What a queued task will ask the backend for. */
export interface QueuedRequest {
  readonly resourceUrl: string;
  /** Absent: the backend default (1.2) applies. */
  readonly scale?: number;
  /** The project's reuse index entry that names this task (a digest of the request), if any. */
  readonly reuseKey?: string;
}

/** One entry of a task's changes stream: a new status or percent. */
export interface ConversionChange {
  /** The stream entry id (`<ms>-<seq>`). */
  readonly id: string;
  readonly status: string;
  readonly percent: number;
  /** Milliseconds since the epoch. */
  readonly at: number;
}

/** What `saveConversionState` did. */
export type ConversionSaveOutcome = "changed" | "unchanged" | "not-owner";

/** One entry of a channel's whiteboard-events stream: a conversion task reached its end. */
export interface WhiteboardEvent {
  readonly id: string;
  readonly taskUuid: string;
  readonly status: string;
  readonly type: ConversionType;
  readonly pageCount?: number;
  readonly by: string;
  /** Milliseconds since the epoch. */
  readonly at: number;
}

/** The conversion tasks in the store, and what the followers of every instance share (the due set, leases). */
export interface ConversionStore {
  /**
   * Records a new conversion task and makes it due for its first poll at
   * `firstPollAt` (ms). The record expires after the store's retention
   * (default 7 days) after its last change.
   */
  recordConversion(task: ConversionTaskRecord, firstPollAt: number): Promise<void>;
  getConversion(uuid: string): Promise<ConversionTaskRecord | undefined>;
  /**
   * Up to `max` tasks due at `now` (ms) that no live lease holds; each one
   * returned is now leased to `owner` for `leaseMs`. A due task whose record is
   * gone leaves the due set. Earliest due first, each with the time it was due.
   */
  claimDueConversions(now: number, max: number, owner: string, leaseMs: number): Promise<DueConversion[]>;
  /** Extends the lease when `owner` still holds it; false when it does not (another follower took over). */
  renewConversionLease(uuid: string, owner: string, leaseMs: number): Promise<boolean>;
  /**
   * Saves a new state of a task leased to `owner`: the record's fields of
   * `state` and `updated_at` = `at` when any of them changed, plus one entry in
   * the task's changes stream when the status or percent changed. Then, when
   * `nextPollAt` is given, the task is due again then; when the state is
   * terminal, it is announced once on the channel's whiteboard-events stream
   * and leaves the due set. Last, the lease is released. "not-owner" when
   * `owner` does not hold the lease (nothing written) or the record is gone
   * (the task leaves the due set).
   */
  saveConversionState(
    uuid: string,
    owner: string,
    state: ConversionState,
    at: number,
    nextPollAt: number | undefined,
  ): Promise<ConversionSaveOutcome>;
  /** Makes a task leased to `owner` due again at `nextPollAt` without changing it (a failed poll), and releases the lease. */
  rescheduleConversion(uuid: string, owner: string, nextPollAt: number): Promise<void>;
  /** The task's changes after stream id `afterId` ("0" = all), oldest first, at most `count`. */
  readConversionChanges(uuid: string, afterId: string, count: number): Promise<ConversionChange[]>;
  /** Remembers that the webhook id `id` stands for task `uuid`, for the store's retention. */
  recordWebhook(id: string, uuid: string): Promise<void>;
  /** The task uuid the webhook id stands for; undefined when unknown or expired. */
  webhookTask(id: string): Promise<string | undefined>;
  /**
   * Makes a followed task due at `at`, unless it is due sooner already. False,
   * and nothing written, when the task is not in the due set (it ended).
   */
  wakeConversion(uuid: string, at: number): Promise<boolean>;
}

/** The backend's two conversion APIs; a task can only be asked about on the API that created it. */
export type ConversionApi = "projector" | "legacy";
export type ConversionStatus = "Waiting" | "Converting" | "Finished" | "Fail" | "Abort";
/** A task in its project's queue, not yet submitted to the backend. */
export const QUEUED_STATUS = "Queued";
export const TERMINAL_CONVERSION_STATUSES: readonly ConversionStatus[] = ["Finished", "Fail", "Abort"];

/** One converted page: static pages have url/width/height; dynamic ones a preview_url (when previews exist). */
export interface ConversionPage {
  readonly page: number;
  readonly url?: string;
  readonly width?: number;
  readonly height?: number;
  readonly previewUrl?: string;
}

/** Where a task stands, in one shape for both APIs. */
export interface ConversionState {
  readonly status: ConversionStatus;
  /** 0–100. */
  readonly percent: number;
  readonly pageCount?: number;
  readonly pages: readonly ConversionPage[];
  /** Dynamic conversions: where the converted files live (`https://…/dynamicConvert`). */
  readonly prefix?: string;
  readonly failedReason?: string;
}

/** What is needed to ask the backend about a task again. */
export interface ConversionTaskRef {
  readonly uuid: string;
  readonly type: ConversionType;
  readonly api: ConversionApi;
  readonly region: Region;
  readonly credentials: WhiteboardCredentials;
}

export interface ConversionRequest {
  readonly resourceUrl: string;
  readonly type: ConversionType;
  /** Absent: the backend default (1.2) applies. */
  readonly scale?: number;
  readonly region: Region;
  readonly credentials: WhiteboardCredentials;
  /** Where the backend reports the task's progress (projector API only; ignored on legacy). */
  readonly webhookEndpoint?: string;
}

export interface ConversionTask {
  readonly uuid: string;
  readonly type: ConversionType;
  /** As the backend reports it: Waiting | Converting | Finished | Fail. */
  readonly status: string;
  /** The API the task was created on, the only one that can be asked about it. */
  readonly api: ConversionApi;
}

/** The backend over its capacity, as `ConversionBackend` reports it: `unavailable` with a time to retry after. */
export function isOverCapacity(e: unknown): e is Failure & { readonly retryAfterSeconds: number } {
  return e instanceof Failure && e.kind === "unavailable" && e.retryAfterSeconds !== undefined;
}

/** The Netless (Agora Interactive Whiteboard) file-conversion backend. */
export interface ConversionBackend {
  /**
   * Starts a conversion task. Failures: backend 5xx or connection error →
   * `unavailable`; the backend over its capacity ("too many tasks", 429) →
   * `unavailable` with `retryAfterSeconds`; time-out → `deadline_exceeded`;
   * backend 400 → `invalid`; backend 401/403 or an unreadable answer → `internal`.
   * `invalid` and `unavailable` with `retryAfterSeconds` are refusals: no task
   * was made (safe retries release the key on them, safe-retries.ts).
   */
  createTask(request: ConversionRequest, signal?: AbortSignal): Promise<ConversionTask>;
  /**
   * The task's state now. Failures as for `createTask` (a follower retries
   * `unavailable` and `deadline_exceeded` later); a task the backend does not
   * know is no failure but the state `Fail`, failedReason "not found".
   */
  queryTask(ref: ConversionTaskRef, signal?: AbortSignal): Promise<ConversionState>;
  /** Projector: cancels at the backend and returns the state after (Abort). Legacy: `failed_precondition`. */
  cancelTask(ref: ConversionTaskRef, signal?: AbortSignal): Promise<ConversionState>;
}

/** A task a follower claimed, and when it was due (ms): how late its poll is. */
export interface DueConversion {
  readonly uuid: string;
  readonly dueAt: number;
}
