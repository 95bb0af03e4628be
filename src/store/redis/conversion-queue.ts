/**
 * The Redis store's raw conversion-queue operations, each one call through the
 * store's plumbing (src/store/redis/calls.ts). The order of the steps is the
 * queue front's (src/store/conversion-queue-steps.ts).
 *
 * Acknowledged writes (`calls.write`, with REDIS_MIN_REPLICAS): what an
 * accepted request rests on — its place in the queue and the index of queues
 * — and the recorded submission, after which the task is never submitted
 * again. Leases, the pace, the attempt mark and removals are not: losing one
 * only delays a turn or repeats a step that checks before it writes.
 */
import type {
  ConversionState,
  DueQueue,
  EnqueueOptions,
  EnqueueOutcome,
  QueueTurn,
  Submission,
  SubmissionMark,
  SubmissionRecord,
} from "../../services/ports.js";
import type { QueuePrimitives } from "../conversion-queue-steps.js";
import { CONVERSION_CHANGES_MAXLEN, type KeySchema } from "../schema/keys.js";
import type { RedisCalls } from "./calls.js";
import { perConnection } from "./cluster-connections.js";
import { defineConversionScripts } from "./conversion-scripts.js";
import { defineQueueScripts } from "./queue-scripts.js";

const queueScriptsOn = perConnection(defineQueueScripts);
const conversionScriptsOn = perConnection(defineConversionScripts);

export class RedisConversionQueue implements QueuePrimitives {
  constructor(
    private readonly calls: RedisCalls,
    private readonly keys: KeySchema,
    private readonly retentionSeconds: number,
  ) {}

  async enqueue(project: string, uuid: string, o: EnqueueOptions): Promise<EnqueueOutcome> {
    const queue = this.keys.conversionQueue(project);
    const reply = await this.calls.write("enqueueConversion", queue, (c) =>
      queueScriptsOn(c).blQueueEnqueue(
        queue,
        this.keys.conversionReuse(project, o.reuseKey),
        uuid,
        String(o.max),
        o.reuse ? "1" : "0",
        o.replacing ?? "",
        String(this.retentionSeconds),
      ),
    );
    const [kind, value] = reply;
    if (kind === "reused") return { kind, uuid: String(value) };
    if (kind === "full") return { kind, length: Number(value) };
    if (kind === "queued") return { kind, position: Number(value) };
    throw new Error(`enqueueConversion: unexpected script reply ${JSON.stringify(reply)}`);
  }

  async deleteRecord(uuid: string): Promise<void> {
    await this.calls.call("enqueueConversion", (c) => c.del(this.keys.conversion(uuid)));
  }

  async indexQueue(project: string, at: number): Promise<void> {
    const key = this.keys.conversionQueues();
    await this.calls.write("indexConversionQueue", key, (c) => c.zadd(key, "NX", String(at), project));
  }

  async scheduleQueue(project: string, at: number): Promise<void> {
    const key = this.keys.conversionQueues();
    await this.calls.write("indexConversionQueue", key, (c) => c.zadd(key, String(at), project));
  }

  async unindexQueue(project: string): Promise<void> {
    await this.calls.call("indexConversionQueue", (c) => c.zrem(this.keys.conversionQueues(), project));
  }

  async dueQueues(now: number, count: number): Promise<DueQueue[]> {
    const flat = await this.calls.call("claimDueQueues", (c) =>
      c.zrangebyscore(this.keys.conversionQueues(), "-inf", String(now), "WITHSCORES", "LIMIT", 0, count),
    );
    const due: DueQueue[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      due.push({ project: flat[i] as string, dueAt: Number(flat[i + 1]) });
    }
    return due;
  }

  async tryQueueLease(project: string, owner: string, leaseMs: number): Promise<boolean> {
    const key = this.keys.conversionQueueLease(project);
    const reply = await this.calls.call("claimDueQueues", (c) => c.set(key, owner, "PX", leaseMs, "NX"));
    return reply === "OK";
  }

  async releaseQueueLease(project: string, owner: string): Promise<void> {
    const key = this.keys.conversionQueueLease(project);
    await this.calls.call("releaseConversionQueue", (c) => conversionScriptsOn(c).blConvRelease(key, owner));
  }

  async takeTurn(project: string, owner: string, paceMs: number, inFlight: readonly string[]): Promise<QueueTurn> {
    const reply = await this.calls.call("takeConversionTurn", (c) =>
      queueScriptsOn(c).blQueueTakeTurn(
        this.keys.conversionQueue(project),
        this.keys.conversionPace(project),
        this.keys.conversionQueueLease(project),
        owner,
        String(Math.max(1, Math.ceil(paceMs))),
        ...inFlight,
      ),
    );
    const [kind, value] = reply;
    if (kind === "submit" && value !== undefined) return { kind, uuid: value };
    if (kind === "wait") return { kind, ms: Number(value) };
    if (kind === "empty" || kind === "lost" || kind === "busy") return { kind };
    throw new Error(`takeConversionTurn: unexpected script reply ${JSON.stringify(reply)}`);
  }

  async holdTurns(project: string, ms: number): Promise<void> {
    const key = this.keys.conversionPace(project);
    await this.calls.call("holdConversionTurns", (c) =>
      queueScriptsOn(c).blQueueHold(key, String(Math.max(1, Math.ceil(ms)))),
    );
  }

  async giveBackTurn(project: string, uuid: string): Promise<void> {
    const key = this.keys.conversionPace(project);
    // The release script deletes a key holding the given value, as it does a lease.
    await this.calls.call("holdConversionTurns", (c) => conversionScriptsOn(c).blConvRelease(key, uuid));
  }

  async position(project: string, uuid: string): Promise<number | undefined> {
    const rank = await this.calls.call("conversionQueuePosition", (c) =>
      c.zrank(this.keys.conversionQueue(project), uuid),
    );
    return rank === null ? undefined : rank + 1;
  }

  length(project: string): Promise<number> {
    return this.calls.call("conversionQueueLength", (c) => c.zcard(this.keys.conversionQueue(project)));
  }

  async dequeue(project: string, uuid: string): Promise<void> {
    await this.calls.call("dequeueConversion", (c) => c.zrem(this.keys.conversionQueue(project), uuid));
  }

  async markSubmitting(uuid: string, at: number): Promise<SubmissionMark> {
    const reply = await this.calls.call("markConversionSubmitting", (c) =>
      queueScriptsOn(c).blQueueMarkSubmitting(this.keys.conversion(uuid), String(at)),
    );
    if (reply === "marked" || reply === "submitted" || reply === "ended" || reply === "gone") return reply;
    throw new Error(`markConversionSubmitting: unexpected script reply ${JSON.stringify(reply)}`);
  }

  async writeSubmission(uuid: string, s: Submission): Promise<SubmissionRecord> {
    const record = this.keys.conversion(uuid);
    const reply = await this.calls.write("recordConversionSubmission", record, (c) =>
      queueScriptsOn(c).blQueueRecordSubmission(
        record,
        this.keys.conversionChanges(uuid),
        s.backendUuid,
        s.api,
        s.status,
        String(s.at),
        String(this.retentionSeconds),
        String(CONVERSION_CHANGES_MAXLEN),
      ),
    );
    if (reply === "recorded" || reply === "cancelled" || reply === "gone") return reply;
    throw new Error(`recordConversionSubmission: unexpected script reply ${JSON.stringify(reply)}`);
  }

  async dueUnlessDue(uuid: string, at: number): Promise<void> {
    const key = this.keys.conversionsDue();
    await this.calls.write("setConversionDue", key, (c) => c.zadd(key, "NX", String(at), uuid));
  }

  async writeQueuedEnd(uuid: string, state: ConversionState, at: number): Promise<"ended" | "not-queued" | "gone"> {
    const record = this.keys.conversion(uuid);
    const reply = await this.calls.write("endQueuedConversion", record, (c) =>
      queueScriptsOn(c).blQueueEndQueued(
        record,
        this.keys.conversionChanges(uuid),
        state.status,
        String(at),
        String(this.retentionSeconds),
        String(CONVERSION_CHANGES_MAXLEN),
        state.failedReason ?? "",
      ),
    );
    if (reply === "ended" || reply === "not-queued" || reply === "gone") return reply;
    throw new Error(`endQueuedConversion: unexpected script reply ${JSON.stringify(reply)}`);
  }
}
