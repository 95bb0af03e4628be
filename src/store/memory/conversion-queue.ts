/**
 * The in-memory store's raw conversion-queue operations, over its key space,
 * on the same keys and fields as Redis (src/store/redis/conversion-queue.ts
 * and its scripts). The order of the steps is the queue front's
 * (src/store/conversion-queue-steps.ts).
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
import { changeFields, RESOURCE_FIELD } from "../schema/conversion-records.js";
import { CONVERSION_CHANGES_MAXLEN, type KeySchema } from "../schema/keys.js";
import type { MemoryKeyspace } from "./keyspace.js";

export class MemoryConversionQueue implements QueuePrimitives {
  /** `guard` throws `Failure("unavailable")` while the store is unavailable or closed. */
  constructor(
    private readonly data: MemoryKeyspace,
    private readonly keys: KeySchema,
    private readonly guard: () => void,
    private readonly retentionSeconds: number,
  ) {}

  async enqueue(project: string, uuid: string, o: EnqueueOptions): Promise<EnqueueOutcome> {
    this.guard();
    const reuseKey = this.keys.conversionReuse(project, o.reuseKey);
    const named = this.string(reuseKey);
    if (o.reuse && named !== undefined && named !== o.replacing) return { kind: "reused", uuid: named };
    const queue = this.data.writableSortedSet(this.keys.conversionQueue(project));
    if (queue.size >= o.max) {
      this.dropIfEmpty(this.keys.conversionQueue(project));
      return { kind: "full", length: queue.size };
    }
    const tail = Math.max(-1, ...queue.values());
    queue.set(uuid, tail + 1);
    this.setString(reuseKey, uuid, this.retentionSeconds * 1000);
    return { kind: "queued", position: queue.size };
  }

  async deleteRecord(uuid: string): Promise<void> {
    this.guard();
    this.data.delete(this.keys.conversion(uuid));
  }

  async indexQueue(project: string, at: number): Promise<void> {
    this.guard();
    const index = this.data.writableSortedSet(this.keys.conversionQueues());
    if (!index.has(project)) index.set(project, at);
  }

  async scheduleQueue(project: string, at: number): Promise<void> {
    this.guard();
    this.data.writableSortedSet(this.keys.conversionQueues()).set(project, at);
  }

  async unindexQueue(project: string): Promise<void> {
    this.guard();
    this.data.writableSortedSet(this.keys.conversionQueues()).delete(project);
    this.dropIfEmpty(this.keys.conversionQueues());
  }

  async dueQueues(now: number, count: number): Promise<DueQueue[]> {
    this.guard();
    const entry = this.data.get(this.keys.conversionQueues());
    if (entry?.type !== "zset") return [];
    // Like ZRANGEBYSCORE: by score, then by member.
    return [...entry.scores]
      .filter(([, score]) => score <= now)
      .sort(([a, x], [b, y]) => x - y || (a < b ? -1 : a > b ? 1 : 0))
      .slice(0, count)
      .map(([project, dueAt]) => ({ project, dueAt }));
  }

  async tryQueueLease(project: string, owner: string, leaseMs: number): Promise<boolean> {
    this.guard();
    const key = this.keys.conversionQueueLease(project);
    if (this.data.get(key) !== undefined) return false;
    this.setString(key, owner, leaseMs);
    return true;
  }

  async releaseQueueLease(project: string, owner: string): Promise<void> {
    this.guard();
    const key = this.keys.conversionQueueLease(project);
    if (this.string(key) === owner) this.data.delete(key);
  }

  async takeTurn(project: string, owner: string, paceMs: number, inFlight: readonly string[]): Promise<QueueTurn> {
    this.guard();
    if (this.string(this.keys.conversionQueueLease(project)) !== owner) return { kind: "lost" };
    const heads = this.ordered(project).slice(0, inFlight.length + 1);
    if (heads.length === 0) return { kind: "empty" };
    const head = heads.find((uuid) => !inFlight.includes(uuid));
    if (head === undefined) return { kind: "busy" };
    const left = this.ttl(this.keys.conversionPace(project));
    if (left > 0) return { kind: "wait", ms: left };
    this.setString(this.keys.conversionPace(project), head, Math.max(1, Math.ceil(paceMs)));
    return { kind: "submit", uuid: head };
  }

  async holdTurns(project: string, ms: number): Promise<void> {
    this.guard();
    const key = this.keys.conversionPace(project);
    if (this.ttl(key) < ms) this.setString(key, "1", Math.max(1, Math.ceil(ms)));
  }

  async giveBackTurn(project: string, uuid: string): Promise<void> {
    this.guard();
    const key = this.keys.conversionPace(project);
    if (this.string(key) === uuid) this.data.delete(key);
  }

  async position(project: string, uuid: string): Promise<number | undefined> {
    this.guard();
    const rank = this.ordered(project).indexOf(uuid);
    return rank < 0 ? undefined : rank + 1;
  }

  async length(project: string): Promise<number> {
    this.guard();
    return this.ordered(project).length;
  }

  async dequeue(project: string, uuid: string): Promise<void> {
    this.guard();
    const key = this.keys.conversionQueue(project);
    const entry = this.data.get(key);
    if (entry?.type !== "zset") return;
    entry.scores.delete(uuid);
    this.dropIfEmpty(key);
  }

  async markSubmitting(uuid: string, at: number): Promise<SubmissionMark> {
    this.guard();
    const entry = this.data.get(this.keys.conversion(uuid));
    if (entry?.type !== "hash") return "gone";
    const hash = entry.fields;
    if (hash.has("backend_uuid")) return "submitted";
    if (hash.get("status") !== "Queued") return "ended";
    hash.set("attempts", String(Number(hash.get("attempts") ?? 0) + 1));
    hash.set("submitting_at", String(at));
    return "marked";
  }

  async writeSubmission(uuid: string, s: Submission): Promise<SubmissionRecord> {
    this.guard();
    const recordKey = this.keys.conversion(uuid);
    const entry = this.data.get(recordKey);
    if (entry?.type !== "hash") return "gone";
    const hash = entry.fields;
    const queued = hash.get("status") === "Queued";
    hash.set("backend_uuid", s.backendUuid);
    hash.set("api", s.api);
    hash.set("submitted_at", String(s.at));
    hash.delete(RESOURCE_FIELD);
    hash.delete("submitting_at");
    const retentionMs = this.retentionSeconds * 1000;
    if (queued) {
      hash.set("status", s.status);
      hash.set("percent", "0");
      hash.set("updated_at", String(s.at));
      this.appendChange(uuid, s.status, s.at);
    }
    this.data.expireIn(recordKey, retentionMs);
    return queued ? "recorded" : "cancelled";
  }

  async dueUnlessDue(uuid: string, at: number): Promise<void> {
    this.guard();
    const due = this.data.writableSortedSet(this.keys.conversionsDue());
    if (!due.has(uuid)) due.set(uuid, at);
  }

  async writeQueuedEnd(uuid: string, state: ConversionState, at: number): Promise<"ended" | "not-queued" | "gone"> {
    this.guard();
    const recordKey = this.keys.conversion(uuid);
    const entry = this.data.get(recordKey);
    if (entry?.type !== "hash") return "gone";
    const hash = entry.fields;
    if (hash.get("status") !== "Queued") return "not-queued";
    hash.set("status", state.status);
    hash.set("updated_at", String(at));
    if (state.failedReason !== undefined && state.failedReason !== "") hash.set("failed_reason", state.failedReason);
    hash.delete(RESOURCE_FIELD);
    hash.delete("submitting_at");
    this.data.expireIn(recordKey, this.retentionSeconds * 1000);
    this.appendChange(uuid, state.status, at);
    return "ended";
  }

  private appendChange(uuid: string, status: string, at: number): void {
    const key = this.keys.conversionChanges(uuid);
    const stream = this.data.writableStream(key);
    this.data.append(key, stream, changeFields(status, 0, at), CONVERSION_CHANGES_MAXLEN);
    this.data.expireIn(key, this.retentionSeconds * 1000);
  }

  /** The project's queue, head first (by score, as ZRANGE). */
  private ordered(project: string): string[] {
    const entry = this.data.get(this.keys.conversionQueue(project));
    if (entry?.type !== "zset") return [];
    return [...entry.scores].sort(([, x], [, y]) => x - y).map(([uuid]) => uuid);
  }

  private string(key: string): string | undefined {
    const entry = this.data.get(key);
    return entry?.type === "string" ? entry.value : undefined;
  }

  private setString(key: string, value: string, ttlMs: number): void {
    this.data.set(key, { type: "string", value, expiresAt: this.data.now() + ttlMs });
  }

  /** Like PTTL for a key that has a time to live: 0 when missing. */
  private ttl(key: string): number {
    const entry = this.data.get(key);
    return entry?.expiresAt === undefined ? 0 : Math.max(0, entry.expiresAt - this.data.now());
  }

  /** Redis keeps no empty sorted set. */
  private dropIfEmpty(key: string): void {
    const entry = this.data.get(key);
    if (entry?.type === "zset" && entry.scores.size === 0) this.data.delete(key);
  }
}
