/**
 * The in-memory store's raw conversion operations, over its key space, on the
 * same keys and fields as Redis (src/store/redis/conversions.ts and its scripts). The
 * order of the steps is the conversion front's (src/store/conversion-steps.ts).
 */
import type { ConversionState, DueConversion } from "../../services/ports.js";
import type { LeaseAttempt, ConversionPrimitives, StateWrite } from "../conversion-steps.js";
import { ANNOUNCED_FIELD, changeFields, progressFields } from "../schema/conversion-records.js";
import { CONVERSION_CHANGES_MAXLEN, type KeySchema, WHITEBOARD_EVENTS_MAXLEN } from "../schema/keys.js";
import type { MemoryKeyspace } from "./keyspace.js";
import type { Fields } from "../schema/channel-records.js";

export class MemoryConversions implements ConversionPrimitives {
  /** `guard` throws `Failure("unavailable")` while the store is unavailable or closed. */
  constructor(
    private readonly data: MemoryKeyspace,
    private readonly keys: KeySchema,
    private readonly guard: () => void,
    private readonly retentionSeconds: number,
  ) {}

  async writeRecord(uuid: string, fields: Fields): Promise<void> {
    this.guard();
    const key = this.keys.conversion(uuid);
    const hash = this.data.writableHash(key);
    for (const [field, value] of Object.entries(fields)) hash.set(field, value);
    this.data.expireIn(key, this.retentionSeconds * 1000);
  }

  async readRecord(uuid: string): Promise<Fields> {
    this.guard();
    return this.data.hashFields(this.keys.conversion(uuid));
  }

  async setDue(uuid: string, at: number): Promise<void> {
    this.guard();
    this.data.writableSortedSet(this.keys.conversionsDue()).set(uuid, at);
  }

  async removeDue(uuid: string): Promise<void> {
    this.guard();
    const key = this.keys.conversionsDue();
    const scores = this.data.writableSortedSet(key);
    scores.delete(uuid);
    if (scores.size === 0) this.data.delete(key); // Redis keeps no empty sorted set
  }

  async postponeDue(uuids: readonly string[], at: number): Promise<void> {
    this.guard();
    const scores = this.data.get(this.keys.conversionsDue());
    if (scores?.type !== "zset") return;
    for (const uuid of uuids) if (scores.scores.has(uuid)) scores.scores.set(uuid, at);
  }

  async dueConversions(now: number, offset: number, count: number): Promise<DueConversion[]> {
    this.guard();
    const entry = this.data.get(this.keys.conversionsDue());
    if (entry?.type !== "zset") return [];
    // Like ZRANGEBYSCORE: by score, then by member.
    return [...entry.scores]
      .filter(([, score]) => score <= now)
      .sort(([a, x], [b, y]) => x - y || (a < b ? -1 : a > b ? 1 : 0))
      .slice(offset, offset + count)
      .map(([uuid, dueAt]) => ({ uuid, dueAt }));
  }

  async tryLease(uuid: string, owner: string, leaseMs: number): Promise<LeaseAttempt> {
    this.guard();
    if (this.data.get(this.keys.conversion(uuid))?.type !== "hash") return "gone";
    const key = this.keys.conversionLease(uuid);
    if (this.data.get(key) !== undefined) return "held";
    this.data.set(key, { type: "string", value: owner, expiresAt: this.data.now() + leaseMs });
    return "leased";
  }

  async renewLease(uuid: string, owner: string, leaseMs: number): Promise<boolean> {
    this.guard();
    if (!this.holds(uuid, owner)) return false;
    this.data.expireIn(this.keys.conversionLease(uuid), leaseMs);
    return true;
  }

  async holdsLease(uuid: string, owner: string): Promise<boolean> {
    this.guard();
    return this.holds(uuid, owner);
  }

  async releaseLease(uuid: string, owner: string): Promise<void> {
    this.guard();
    if (this.holds(uuid, owner)) this.data.delete(this.keys.conversionLease(uuid));
  }

  async writeState(uuid: string, owner: string, state: ConversionState, at: number): Promise<StateWrite> {
    this.guard();
    if (!this.holds(uuid, owner)) return "not-owner";
    const recordKey = this.keys.conversion(uuid);
    if (this.data.get(recordKey) === undefined) {
      this.data.delete(this.keys.conversionLease(uuid));
      return "gone";
    }
    const changesKey = this.keys.conversionChanges(uuid);
    // Check both types before writing either, as the Redis script does.
    const changes = this.data.writableStream(changesKey); // creates nothing yet
    const hash = this.data.writableHash(recordKey);
    const fields = progressFields(state);
    const moved = hash.get("status") !== fields.status || hash.get("percent") !== fields.percent;
    if (!Object.entries(fields).some(([field, value]) => hash.get(field) !== value)) return "unchanged";
    for (const [field, value] of Object.entries(fields)) hash.set(field, value);
    hash.set("updated_at", String(at));
    const retentionMs = this.retentionSeconds * 1000;
    this.data.expireIn(recordKey, retentionMs);
    if (moved)
      this.data.append(changesKey, changes, changeFields(state.status, state.percent, at), CONVERSION_CHANGES_MAXLEN);
    this.data.expireIn(changesKey, retentionMs);
    return "changed";
  }

  async markAnnounced(uuid: string): Promise<void> {
    this.guard();
    const entry = this.data.get(this.keys.conversion(uuid));
    if (entry?.type === "hash") entry.fields.set(ANNOUNCED_FIELD, "1");
  }

  async appendWhiteboardEvent(project: string, channel: string, fields: Fields): Promise<void> {
    this.guard();
    const key = this.keys.whiteboardEvents(project, channel);
    this.data.append(key, this.data.writableStream(key), fields, WHITEBOARD_EVENTS_MAXLEN);
  }

  async readChanges(uuid: string, afterId: string, count: number): Promise<Array<{ id: string; fields: Fields }>> {
    this.guard();
    const entry = this.data.get(this.keys.conversionChanges(uuid));
    if (entry?.type !== "stream") return [];
    const after = streamId(afterId);
    return entry.entries.filter((e) => compareIds(streamId(e.id), after) > 0).slice(0, count);
  }

  async writeWebhook(id: string, uuid: string): Promise<void> {
    this.guard();
    const expiresAt = this.data.now() + this.retentionSeconds * 1000;
    this.data.set(this.keys.conversionWebhook(id), { type: "string", value: uuid, expiresAt });
  }

  async readWebhook(id: string): Promise<string | undefined> {
    this.guard();
    const entry = this.data.get(this.keys.conversionWebhook(id));
    return entry?.type === "string" ? entry.value : undefined;
  }

  async advanceDue(uuid: string, at: number): Promise<boolean> {
    this.guard();
    const entry = this.data.get(this.keys.conversionsDue());
    const score = entry?.type === "zset" ? entry.scores.get(uuid) : undefined;
    if (entry?.type !== "zset" || score === undefined) return false;
    if (score > at) entry.scores.set(uuid, at);
    return true;
  }

  private holds(uuid: string, owner: string): boolean {
    const lease = this.data.get(this.keys.conversionLease(uuid));
    return lease?.type === "string" && lease.value === owner;
  }
}

/** `<ms>-<seq>` (or `<ms>`, seq 0) as numbers. */
function streamId(id: string): [number, number] {
  const [ms, seq] = id.split("-");
  return [Number(ms), Number(seq ?? 0)];
}

function compareIds(a: [number, number], b: [number, number]): number {
  return a[0] - b[0] || a[1] - b[1];
}
