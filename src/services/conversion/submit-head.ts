/**
 * One turn's work at the head of a project's queue (submitter.ts takes the
 * turns): the attempt marked, the backend asked, its uuid recorded and the
 * task handed to the follower — or, when the backend cannot take it now, the
 * project's turns held back; when it rejects it, the task ended as Fail.
 */
import { Failure } from "../failure.js";
import {
  type ConversionBackend,
  type ConversionTaskRecord,
  isOverCapacity,
  type Store,
  type SubmissionOutcome,
  type WhiteboardSettings,
} from "../ports.js";
import type { FollowerSettings } from "./follower.js";
import type { ConversionWebhooks } from "./webhooks.js";

/** What a head's submission needs. */
export interface HeadSubmission {
  readonly store: Store;
  readonly backend: ConversionBackend;
  readonly settings: Pick<FollowerSettings, "firstPollMs" | "followMs">;
  /** With CONVERSION_WEBHOOK_BASE: each projector task gets a webhook of its own. */
  readonly webhooks?: Pick<ConversionWebhooks, "issue"> | undefined;
  /** Told of every turn that went wrong (for the logs); never of a secret. */
  readonly onTrouble: (project: string, error: unknown) => void;
  /** Told of every submission: its outcome, and how long (ms) the request had waited since it was accepted. */
  readonly onSubmission?: (outcome: SubmissionOutcome, waitMs: number) => void;
  readonly now?: () => number;
}

/** How long a project's turns wait after trouble other than the backend's refusal. */
export const TROUBLE_WAIT_MS = 2_000;

/**
 * Submits the head of the queue. A head that needs no submission gives its
 * turn back; one that must wait holds the project's turns back.
 */
export async function submitHead(
  o: HeadSubmission,
  project: string,
  uuid: string,
  whiteboard: WhiteboardSettings | undefined,
): Promise<void> {
  const { store, settings } = o;
  const queue = store.conversionQueue;
  const at = (o.now ?? Date.now)();
  const mark = await queue.markSubmitting(uuid, at);
  if (mark !== "marked") {
    if (mark === "submitted") await queue.followSubmitted(uuid, at + settings.firstPollMs);
    if (mark === "ended") await queue.finishEnded(uuid);
    else await queue.dequeue(project, uuid);
    await queue.giveBackTurn(project, uuid);
    return;
  }
  const task = await queue.getQueuedTask(uuid);
  if (task?.request === undefined) {
    await fail(o, uuid, "the request could not be read", at);
    return;
  }
  if (whiteboard === undefined) {
    await retryOrTimeOut(o, task, at);
    return;
  }
  const told = (outcome: SubmissionOutcome) =>
    o.onSubmission?.(outcome, Math.max(0, (o.now ?? Date.now)() - task.createdAt));
  try {
    await send(o, task, whiteboard);
    told("ok");
  } catch (e) {
    if (isOverCapacity(e)) {
      told("over_capacity");
      await queue.holdTurns(project, e.retryAfterSeconds * 1000);
    } else if (e instanceof Failure && e.kind === "invalid") {
      told("rejected");
      await fail(o, uuid, "the conversion backend rejected the request", at);
    } else {
      told("error");
      o.onTrouble(project, e);
      await retryOrTimeOut(o, task, at);
    }
  }
}

/** Asks the backend for the task, records its uuid, makes it due for its first poll, and takes it out of the queue. */
async function send(o: HeadSubmission, task: ConversionTaskRecord, whiteboard: WhiteboardSettings): Promise<void> {
  const { store, backend, settings, webhooks } = o;
  const request = task.request;
  if (request === undefined) throw new TypeError("a queued task carries its request");
  // Mapped before the task exists, so that its first call finds it.
  const webhook = task.api === "projector" ? webhooks?.issue() : undefined;
  if (webhook !== undefined) await store.conversions.recordWebhook(webhook.id, task.uuid);
  const created = await backend.createTask({
    resourceUrl: request.resourceUrl,
    type: task.type,
    ...(request.scale === undefined ? {} : { scale: request.scale }),
    region: whiteboard.region,
    credentials: whiteboard.credentials,
    ...(webhook === undefined ? {} : { webhookEndpoint: webhook.url }),
  });
  const at = (o.now ?? Date.now)();
  const recorded = await store.conversionQueue.recordSubmission(task.uuid, {
    backendUuid: created.uuid,
    api: created.api,
    status: created.status,
    at,
    firstPollAt: at + settings.firstPollMs,
  });
  await store.conversionQueue.dequeue(task.project, task.uuid);
  if (recorded === "cancelled" && created.api === "projector") {
    // Cancelled while it was being submitted: it stays Abort, and the backend need not convert it.
    const ref = { uuid: created.uuid, type: task.type, api: created.api, ...whiteboard };
    await backend.cancelTask(ref).catch((e: unknown) => o.onTrouble(task.project, e));
  }
}

/** The head stays, and is tried again after a wait, until it is `followMs` old: then it fails. */
async function retryOrTimeOut(o: HeadSubmission, task: ConversionTaskRecord, at: number): Promise<void> {
  if (at - task.createdAt < o.settings.followMs) await o.store.conversionQueue.holdTurns(task.project, TROUBLE_WAIT_MS);
  else await fail(o, task.uuid, "timeout", at);
}

async function fail(o: HeadSubmission, uuid: string, reason: string, at: number): Promise<void> {
  await o.store.conversionQueue.endQueued(uuid, { status: "Fail", percent: 0, pages: [], failedReason: reason }, at);
}
