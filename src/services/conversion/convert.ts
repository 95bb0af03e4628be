/**
 * Convert a document for the whiteboard. Transport-free: the caller is
 * already authenticated and the request already validated against the proto
 * rules (src/server/call/pipeline.ts does both, in that order). A call with
 * an Idempotency-Key runs under safe retries (safe-retries.ts).
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  type ConvertFileRequest,
  ConvertFileRequestSchema,
  type ConvertFileResponseSchema,
} from "../../../gen/whiteboard/v1/whiteboard_pb.js";
import { Failure } from "../failure.js";
import { parseIdempotencyKey } from "../idempotency/key.js";
import type { PassphraseGuard } from "../passphrase-guard.js";
import type { ConversionWebhooks } from "./webhooks.js";
import type { Caller, ConversionBackend, ConversionType, Store } from "../ports.js";
import { fingerprintOf, type SafeRetries } from "../idempotency/safe-retries.js";

type ConvertAnswer = MessageInitShape<typeof ConvertFileResponseSchema>;

export class WhiteboardConversions {
  constructor(
    private readonly store: Store,
    private readonly backend: ConversionBackend,
    private readonly guard: PassphraseGuard,
    /** The follower first asks about a new task this long after creating it (CONVERSION_POLL_FIRST_MS). */
    private readonly firstPollMs: number,
    /** Calls sent with an Idempotency-Key. */
    private readonly retries: SafeRetries,
    /** With CONVERSION_WEBHOOK_BASE: each projector task gets a webhook of its own. */
    private readonly webhooks?: Pick<ConversionWebhooks, "issue">,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Starts a conversion. With `idempotencyKey` (the raw header or metadata
   * value), the first call with the key does the work and keeps its answer; a
   * retry of the same request with the key gets that answer (same task uuid,
   * same status as first answered) without a second task.
   */
  convertFile(
    caller: Caller,
    req: ConvertFileRequest,
    signal?: AbortSignal,
    idempotencyKey?: string,
  ): Promise<ConvertAnswer> {
    if (idempotencyKey === undefined) return this.convert(caller, req, signal, () => {});
    const key = parseIdempotencyKey(idempotencyKey);
    return this.retries.run({
      scope: { project: caller.project, subject: caller.subject, key },
      fingerprint: fingerprintOf(ConvertFileRequestSchema, req),
      work: (askingBackend) => this.convert(caller, req, signal, askingBackend),
      encode: (answer) => JSON.stringify({ task_uuid: answer.taskUuid, status: answer.status }),
      decode: decodeAnswer,
    });
  }

  private async convert(
    caller: Caller,
    req: ConvertFileRequest,
    signal: AbortSignal | undefined,
    askingBackend: () => void,
  ): Promise<ConvertAnswer> {
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
    // Given back while the backend is asked (it never fails: a lost one costs the caller one guess).
    const givingBack = guess.giveBack();
    // Validation allows only these two values.
    const type = req.conversionType as ConversionType;
    // The id is ours, chosen before the task (and its uuid) exists.
    const webhook = this.webhooks?.issue();
    askingBackend();
    const task = await this.backend.createTask(
      {
        resourceUrl: req.resourceUrl,
        type,
        ...(req.conversionScale === undefined ? {} : { scale: req.conversionScale }),
        region: settings.region,
        credentials: settings.credentials,
        ...(webhook === undefined ? {} : { webhookEndpoint: webhook.url }),
      },
      signal,
    );
    await givingBack;
    const createdAt = this.now();
    // Side by side (one round trip): a webhook that comes before its mapping only misses its wake-up.
    const mapped =
      webhook !== undefined && task.api === "projector"
        ? this.store.conversions.recordWebhook(webhook.id, task.uuid)
        : undefined;
    const recorded = this.store.conversions.recordConversion(
      {
        uuid: task.uuid,
        project: record.project,
        channel: record.channel,
        type,
        api: task.api,
        status: task.status,
        percent: 0,
        pages: [],
        createdAt,
        updatedAt: createdAt,
        by: caller.subject,
      },
      createdAt + this.firstPollMs,
    );
    await Promise.all([recorded, mapped]);
    return { taskUuid: task.uuid, status: task.status };
  }
}

/** A kept answer, `{"task_uuid":"…","status":"…"}`; undefined when it is not one. */
function decodeAnswer(text: string): ConvertAnswer | undefined {
  try {
    const value = JSON.parse(text) as { task_uuid?: unknown; status?: unknown };
    const { task_uuid: taskUuid, status } = value;
    return typeof taskUuid === "string" && typeof status === "string" ? { taskUuid, status } : undefined;
  } catch {
    return undefined;
  }
}
