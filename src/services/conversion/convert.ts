/**
 * Accept a document for conversion: it joins its project's queue, and the
 * submitters (submitter.ts) hand it to the backend at the project's pace.
 * An identical request reuses the task, unless the caller says not to.
 * Transport-free: the caller is already authenticated and the request already
 * validated against the proto rules (src/server/call/pipeline.ts does both, in
 * that order). A call with an Idempotency-Key runs under safe retries
 * (safe-retries.ts): a retry of the same call gets the same answer, whereas
 * reuse answers another call's task.
 */
import { createHash, randomUUID } from "node:crypto";
import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  type ConvertFileRequest,
  ConvertFileRequestSchema,
  type ConvertFileResponseSchema,
} from "../../../gen/whiteboard/v1/whiteboard_pb.js";
import { Failure } from "../failure.js";
import { parseIdempotencyKey } from "../idempotency/key.js";
import type { PassphraseGuard } from "../passphrase-guard.js";
import type { ConversionSubmitter } from "./submitter.js";
import { paceMs } from "./pace.js";
import {
  type Caller,
  type ConversionApi,
  type ConversionTaskRecord,
  type ConversionType,
  QUEUED_STATUS,
  type Store,
  type WhiteboardSettings,
} from "../ports.js";
import { fingerprintOf, type SafeRetries } from "../idempotency/safe-retries.js";

type ConvertAnswer = MessageInitShape<typeof ConvertFileResponseSchema>;

export class WhiteboardConversions {
  private readonly api: ConversionApi;
  private readonly queueMax: number;
  private readonly submitter: Pick<ConversionSubmitter, "wake"> | undefined;
  private readonly onQueued: ((position: number) => void) | undefined;
  private readonly onQueueFull: ((project: string, length: number) => void) | undefined;
  private readonly now: () => number;

  constructor(
    private readonly store: Store,
    private readonly guard: PassphraseGuard,
    /** Calls sent with an Idempotency-Key. */
    private readonly retries: SafeRetries,
    o: {
      /** The API new tasks are meant for (CONVERSION_API); the backend client decides in the end. */
      readonly api?: ConversionApi;
      /** Requests one project's queue holds at most (CONVERSION_QUEUE_MAX). */
      readonly queueMax: number;
      /** Woken by each accepted request, so it is submitted at once when its project's pace allows. */
      readonly submitter?: Pick<ConversionSubmitter, "wake">;
      /** Told of each request queued, at its place from 1 (for the metrics). */
      readonly onQueued?: (position: number) => void;
      /** Told of each request refused for a full queue (for the logs). */
      readonly onQueueFull?: (project: string, length: number) => void;
      readonly now?: () => number;
    },
  ) {
    this.api = o.api ?? "projector";
    this.queueMax = o.queueMax;
    this.submitter = o.submitter;
    this.onQueued = o.onQueued;
    this.onQueueFull = o.onQueueFull;
    this.now = o.now ?? Date.now;
  }

  /**
   * Starts a conversion. With `idempotencyKey` (the raw header or metadata
   * value), the first call with the key does the work and keeps its answer; a
   * retry of the same request with the key gets that answer (same task uuid,
   * same status as first answered) without a second task. `_signal` is not
   * heeded: queueing is a few Redis steps, and a request queued is kept for
   * its caller's retry to find, whether or not the caller waited.
   */
  convertFile(
    caller: Caller,
    req: ConvertFileRequest,
    _signal?: AbortSignal,
    idempotencyKey?: string,
  ): Promise<ConvertAnswer> {
    if (idempotencyKey === undefined) return this.convert(caller, req, () => {});
    const key = parseIdempotencyKey(idempotencyKey);
    return this.retries.run({
      scope: { project: caller.project, subject: caller.subject, key },
      fingerprint: fingerprintOf(ConvertFileRequestSchema, req),
      work: (askingBackend) => this.convert(caller, req, askingBackend),
      encode: (answer) =>
        JSON.stringify({
          task_uuid: answer.taskUuid,
          status: answer.status,
          reused: answer.reused === true,
          queue_position: answer.queuePosition ?? 0,
        }),
      decode: decodeAnswer,
    });
  }

  private async convert(caller: Caller, req: ConvertFileRequest, askingBackend: () => void): Promise<ConvertAnswer> {
    const settings = await this.store.getWhiteboard(caller.project);
    if (settings === undefined) {
      throw new Failure("permission_denied", { detail: "the whiteboard is not set up for this project" });
    }
    // A guess taken beside the lookup (none for a proven holder): no answer without one.
    const { guess, record } = await this.guard.lookUp(caller, req.passphrase, (project, p) =>
      this.store.lookupPassphrase(project, p),
    );
    if (record === undefined || record.project !== caller.project) {
      // The miss counts: the guess stays taken (a proven holder takes its guess now).
      await guess.keep();
      throw new Failure("not_found", { detail: "no channel of this project has that passphrase" });
    }
    // Given back while the request is queued (it never fails: a lost one costs the caller one guess).
    const givingBack = guess.giveBack();
    // Validation allows only these two values.
    const type = req.conversionType as ConversionType;
    const scale = req.conversionScale;
    const createdAt = this.now();
    const task: ConversionTaskRecord = {
      // Ours, 32 hex digits like the backend's own uuids: valid from this answer on, whenever the backend gets it.
      uuid: randomUUID().replaceAll("-", ""),
      project: record.project,
      channel: record.channel,
      type,
      api: this.api,
      status: QUEUED_STATUS,
      percent: 0,
      pages: [],
      createdAt,
      updatedAt: createdAt,
      by: caller.subject,
      request: {
        resourceUrl: req.resourceUrl,
        ...(scale === undefined ? {} : { scale }),
        reuseKey: reuseKeyOf(req.resourceUrl, type, scale),
      },
    };
    // A queued request may be the backend's at any moment: a retry with the key must not be another.
    askingBackend();
    const answer = await this.enqueue(task, req.reuse ?? true, settings);
    await givingBack;
    return answer;
  }

  /** Queues the task, or answers the identical request's task (unless it failed: then this one replaces it). */
  private async enqueue(
    task: ConversionTaskRecord,
    reuse: boolean,
    settings: WhiteboardSettings,
  ): Promise<ConvertAnswer> {
    const queue = this.store.conversionQueue;
    const reuseKey = task.request?.reuseKey ?? "";
    let replacing: string | undefined;
    // A named task that failed is replaced; one more named meanwhile is looked at once more.
    for (let look = 0; look < 3; look++) {
      const outcome = await queue.enqueueConversion(task, {
        reuseKey,
        reuse,
        max: this.queueMax,
        ...(replacing === undefined ? {} : { replacing }),
      });
      if (outcome.kind === "queued") {
        this.onQueued?.(outcome.position);
        this.submitter?.wake();
        return { taskUuid: task.uuid, status: QUEUED_STATUS, reused: false, queuePosition: outcome.position };
      }
      if (outcome.kind === "full") {
        this.onQueueFull?.(task.project, outcome.length);
        throw new Failure("queue_full", {
          detail: `the project's conversion queue holds ${outcome.length} requests, its limit`,
          retryAfterSeconds: Math.max(1, Math.ceil((outcome.length * paceMs(settings.conversionQps)) / 1000)),
        });
      }
      const named = await this.store.conversions.getConversion(outcome.uuid);
      if (named !== undefined && named.project === task.project && !FAILED.includes(named.status)) {
        const position =
          named.status === QUEUED_STATUS ? ((await queue.queuePosition(named.project, named.uuid)) ?? 0) : 0;
        return { taskUuid: named.uuid, status: named.status, reused: true, queuePosition: position };
      }
      replacing = outcome.uuid;
    }
    throw new Failure("unavailable", {
      detail: "identical requests are being accepted at once; retry",
      retryAfterSeconds: 1,
    });
  }
}

/** Ends after which an identical request is converted again. */
const FAILED: readonly string[] = ["Fail", "Abort"];

/** Names a request within its project: what makes two requests identical. */
function reuseKeyOf(resourceUrl: string, type: ConversionType, scale: number | undefined): string {
  return createHash("sha256")
    .update(JSON.stringify([resourceUrl, type, scale ?? null]), "utf8")
    .digest("hex");
}

/** A kept answer, `{"task_uuid":"…","status":"…","reused":…,"queue_position":…}`; undefined when it is not one. */
function decodeAnswer(text: string): ConvertAnswer | undefined {
  try {
    const value = JSON.parse(text) as Record<string, unknown>;
    const { task_uuid: taskUuid, status, reused, queue_position: position } = value;
    if (typeof taskUuid !== "string" || typeof status !== "string") return undefined;
    const queuePosition =
      typeof position === "number" && Number.isSafeInteger(position) && position >= 0 ? position : 0;
    return { taskUuid, status, reused: reused === true, queuePosition };
  } catch {
    return undefined;
  }
}
