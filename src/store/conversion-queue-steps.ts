/**
 * The conversion queue's operations of both stores, in one place: the order
 * of their steps, which is what makes them safe when an instance dies
 * half-way, over each store's raw operations on the documented keys
 * (docs/redis-schema.md). A project's queue, pace, lease and reuse index
 * share the project's hash tag; each task's record has its own; the index of
 * queues (`conv-queues`) is one more key. So a step touches one of them, and
 * the order of the steps is what keeps every accepted task on its way:
 *
 * - accept: the record first, then the index of queues, then the queue (with
 *   the reuse index), then the index of queues again — a queue entry always
 *   has its record, and its queue is in the index whichever step an instance
 *   dies after (the second write covers a submitter that saw the queue empty
 *   and took it out between the first two); an accept that reuses a task
 *   still queued indexes its queue too;
 * - submit: the record marked first, then the backend asked, then its uuid
 *   recorded, then the task due for a poll, then taken out of the queue — a
 *   task whose uuid is recorded is never submitted again;
 * - a queue leaves the index only when seen empty after it left (see `releaseQueue`).
 */
import type {
  ConversionQueueStore,
  ConversionState,
  ConversionTaskRecord,
  DueQueue,
  EnqueueOptions,
  EnqueueOutcome,
  QueueTurn,
  Submission,
  SubmissionMark,
  SubmissionRecord,
} from "../services/ports.js";
import type { KeyRing } from "../secrets/key-ring.js";
import { open as openSealed, seal } from "../secrets/sealed-fields.js";
import type { ConversionPrimitives, ConversionSteps } from "./conversion-steps.js";
import { conversionFields, type OpenField, parseConversion, RESOURCE_FIELD } from "./schema/conversion-records.js";

/** What each store does for the queue operations. */
export interface QueuePrimitives {
  /** In one step on the project's keys: the reuse index, the limit, the tail of the queue (ConversionQueueStore). */
  enqueue(project: string, uuid: string, options: EnqueueOptions): Promise<EnqueueOutcome>;
  deleteRecord(uuid: string): Promise<void>;
  /** ZADD NX `conv-queues`: the project's queue is due at `at`, unless it is in the index already. */
  indexQueue(project: string, at: number): Promise<void>;
  /** ZADD `conv-queues`: the project's queue is due at `at`. */
  scheduleQueue(project: string, at: number): Promise<void>;
  unindexQueue(project: string): Promise<void>;
  /** Projects of `conv-queues` scored ≤ `now`, earliest first, at most `count`. */
  dueQueues(now: number, count: number): Promise<DueQueue[]>;
  /** SET lease NX PX. */
  tryQueueLease(project: string, owner: string, leaseMs: number): Promise<boolean>;
  releaseQueueLease(project: string, owner: string): Promise<void>;
  takeTurn(project: string, owner: string, paceMs: number, inFlight: readonly string[]): Promise<QueueTurn>;
  holdTurns(project: string, ms: number): Promise<void>;
  /** DEL the pace when it is the one the turn of `uuid` started. */
  giveBackTurn(project: string, uuid: string): Promise<void>;
  /** ZRANK + 1 in the project's queue. */
  position(project: string, uuid: string): Promise<number | undefined>;
  length(project: string): Promise<number>;
  dequeue(project: string, uuid: string): Promise<void>;
  markSubmitting(uuid: string, at: number): Promise<SubmissionMark>;
  writeSubmission(uuid: string, submission: Submission): Promise<SubmissionRecord>;
  /** ZADD NX `conv-due`. */
  dueUnlessDue(uuid: string, at: number): Promise<void>;
  /** In one step on the task's keys, when it is still Queued: its end, a changes entry, the request dropped. */
  writeQueuedEnd(uuid: string, state: ConversionState, at: number): Promise<"ended" | "not-queued" | "gone">;
}

export class ConversionQueueSteps implements ConversionQueueStore {
  constructor(
    private readonly raw: QueuePrimitives,
    private readonly records: ConversionPrimitives,
    private readonly tasks: ConversionSteps,
    /** SECRETS_KEYS: the resource URL of a queued request is sealed at rest. */
    private readonly ring: KeyRing,
  ) {}

  async enqueueConversion(task: ConversionTaskRecord, options: EnqueueOptions): Promise<EnqueueOutcome> {
    const { request } = task;
    if (request === undefined) throw new TypeError("a queued task carries its request");
    const sealed = seal(this.ring, task.project, RESOURCE_FIELD, request.resourceUrl);
    await this.records.writeRecord(task.uuid, conversionFields(task, sealed));
    await this.raw.indexQueue(task.project, task.createdAt);
    const outcome = await this.raw.enqueue(task.project, task.uuid, options);
    if (outcome.kind !== "queued") {
      await this.raw.deleteRecord(task.uuid);
      // NX: no change when the queue is in the index already.
      if (outcome.kind === "reused" && (await this.raw.position(task.project, outcome.uuid)) !== undefined) {
        await this.raw.indexQueue(task.project, task.createdAt);
      }
      return outcome;
    }
    await this.raw.indexQueue(task.project, task.createdAt);
    return outcome;
  }

  async getQueuedTask(uuid: string): Promise<ConversionTaskRecord | undefined> {
    const open: OpenField = (project, field, stored) => openSealed(this.ring, project, field, stored);
    return parseConversion(uuid, await this.records.readRecord(uuid), open);
  }

  queuePosition(project: string, uuid: string): Promise<number | undefined> {
    return this.raw.position(project, uuid);
  }

  queueLength(project: string): Promise<number> {
    return this.raw.length(project);
  }

  async claimDueQueues(now: number, max: number, owner: string, leaseMs: number): Promise<DueQueue[]> {
    if (max < 1) return [];
    // Leased queues stay in the index until released, so read past them: twice what is wanted.
    const due = await this.raw.dueQueues(now, max * 2);
    const leased = await Promise.all(due.map((q) => this.raw.tryQueueLease(q.project, owner, leaseMs)));
    const claimed = due.filter((_, i) => leased[i]).slice(0, max);
    // One leased past `max` (read in the same batch) is given back at once.
    await Promise.all(
      due
        .filter((_, i) => leased[i])
        .slice(max)
        .map((q) => this.raw.releaseQueueLease(q.project, owner)),
    );
    // Due again when the lease runs out: a takeover, should we die.
    await Promise.all(claimed.map((q) => this.raw.scheduleQueue(q.project, now + leaseMs)));
    return claimed;
  }

  takeTurn(project: string, owner: string, paceMs: number, inFlight: readonly string[] = []): Promise<QueueTurn> {
    return this.raw.takeTurn(project, owner, paceMs, inFlight);
  }

  holdTurns(project: string, ms: number): Promise<void> {
    return this.raw.holdTurns(project, ms);
  }

  giveBackTurn(project: string, uuid: string): Promise<void> {
    return this.raw.giveBackTurn(project, uuid);
  }

  markSubmitting(uuid: string, at: number): Promise<SubmissionMark> {
    return this.raw.markSubmitting(uuid, at);
  }

  async recordSubmission(uuid: string, submission: Submission): Promise<SubmissionRecord> {
    const recorded = await this.raw.writeSubmission(uuid, submission);
    if (recorded === "recorded") await this.records.setDue(uuid, submission.firstPollAt);
    return recorded;
  }

  followSubmitted(uuid: string, at: number): Promise<void> {
    return this.raw.dueUnlessDue(uuid, at);
  }

  dequeue(project: string, uuid: string): Promise<void> {
    return this.raw.dequeue(project, uuid);
  }

  /**
   * An empty queue leaves the index, then is counted again: a task accepted
   * meanwhile either was counted (the queue goes back into the index) or its
   * own accept indexes the queue after this removal.
   */
  async releaseQueue(project: string, owner: string, nextAt: number): Promise<void> {
    if ((await this.raw.length(project)) > 0) {
      await this.raw.scheduleQueue(project, nextAt);
    } else {
      await this.raw.unindexQueue(project);
      if ((await this.raw.length(project)) > 0) await this.raw.indexQueue(project, nextAt);
    }
    await this.raw.releaseQueueLease(project, owner);
  }

  async endQueued(uuid: string, state: ConversionState, at: number): Promise<"ended" | "not-queued"> {
    const written = await this.raw.writeQueuedEnd(uuid, state, at);
    if (written !== "ended") return "not-queued";
    await this.finishEnded(uuid);
    return "ended";
  }

  /** The announcement is marked once made (ConversionSteps), so a repeat announces nothing twice. */
  async finishEnded(uuid: string): Promise<void> {
    const task = parseConversion(uuid, await this.records.readRecord(uuid));
    if (task === undefined) return;
    await this.tasks.announceEnd(uuid, task.status, task.updatedAt);
    await this.raw.dequeue(task.project, uuid);
  }
}
