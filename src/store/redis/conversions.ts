/**
 * The Redis store's raw conversion operations (the follower's keys), each one
 * call through the store's plumbing (src/store/redis/calls.ts), so every one of them is
 * bounded, coalesced and fails as `unavailable`. The order of the steps is the
 * conversion front's (src/store/conversion-steps.ts). The keys of one task share a hash
 * tag, so the scripts work on a Cluster; `conv-due` and the channel's stream
 * are addressed on their own.
 *
 * Acknowledged writes (`calls.write`: with REDIS_MIN_REPLICAS, on that many
 * replicas before they count as done): what ConvertFile answers for — the
 * record, its place in `conv-due`, the webhook mapping — and what the follower
 * builds on — its saves and the whiteboard-events announcement, which must not
 * be lost once the task has left `conv-due` (on a Cluster those live on other
 * masters, whose failovers are independent). Leases, the `announced` mark, the
 * removal from `conv-due` and wake-ups are not: losing one only repeats a
 * poll or an announcement.
 */
import type { ConversionState, DueConversion } from "../../services/ports.js";
import type { LeaseAttempt, ConversionPrimitives, StateWrite } from "../conversion-steps.js";
import { progressFields } from "../schema/conversion-records.js";
import { CONVERSION_CHANGES_MAXLEN, type KeySchema, WHITEBOARD_EVENTS_MAXLEN } from "../schema/keys.js";
import { type Fields, pairsToFields } from "../schema/channel-records.js";
import { perConnection } from "./cluster-connections.js";
import { execAll, orIfWrongType, type RedisCalls } from "./calls.js";
import { type ConversionScriptCommands, defineConversionScripts } from "./conversion-scripts.js";

/** The conversion scripts on a connection: the client's, or (writes with WAIT on a Cluster) a node's own. */
const scriptsOn = perConnection(defineConversionScripts);

export class RedisConversions implements ConversionPrimitives {
  private readonly scripts: ConversionScriptCommands;

  constructor(
    private readonly calls: RedisCalls,
    private readonly keys: KeySchema,
    private readonly retentionSeconds: number,
  ) {
    this.scripts = scriptsOn(calls.client);
  }

  async writeRecord(uuid: string, fields: Fields): Promise<void> {
    const key = this.keys.conversion(uuid);
    // One transaction, so a record never exists without its expiry.
    await this.calls.write("recordConversion", key, (c) =>
      execAll(c.multi().hset(key, fields).expire(key, this.retentionSeconds)),
    );
  }

  readRecord(uuid: string): Promise<Fields> {
    return this.calls.readHash("getConversion", this.keys.conversion(uuid));
  }

  async setDue(uuid: string, at: number): Promise<void> {
    const key = this.keys.conversionsDue();
    await this.calls.write("setConversionDue", key, (c) => c.zadd(key, String(at), uuid));
  }

  async removeDue(uuid: string): Promise<void> {
    await this.calls.call("removeConversionDue", (c) => c.zrem(this.keys.conversionsDue(), uuid));
  }

  async postponeDue(uuids: readonly string[], at: number): Promise<void> {
    if (uuids.length === 0) return;
    const key = this.keys.conversionsDue();
    const pairs = uuids.flatMap((uuid) => [String(at), uuid]);
    await this.calls.call("claimDueConversions", (c) => c.zadd(key, "XX", ...pairs));
  }

  async dueConversions(now: number, offset: number, count: number): Promise<DueConversion[]> {
    const flat = await this.calls.call("claimDueConversions", (c) =>
      c.zrangebyscore(this.keys.conversionsDue(), "-inf", String(now), "WITHSCORES", "LIMIT", offset, count),
    );
    const due: DueConversion[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) due.push({ uuid: flat[i] as string, dueAt: Number(flat[i + 1]) });
    return due;
  }

  async tryLease(uuid: string, owner: string, leaseMs: number): Promise<LeaseAttempt> {
    const { conversion, conversionLease } = this.keys;
    const reply = await this.calls.call("claimDueConversions", () =>
      this.scripts.blConvClaim(conversion(uuid), conversionLease(uuid), owner, String(leaseMs)),
    );
    if (reply === 1) return "leased";
    return reply === 0 ? "held" : "gone";
  }

  async renewLease(uuid: string, owner: string, leaseMs: number): Promise<boolean> {
    const key = this.keys.conversionLease(uuid);
    const reply = await this.calls.call("renewConversionLease", () =>
      this.scripts.blConvRenew(key, owner, String(leaseMs)),
    );
    return reply === 1;
  }

  async holdsLease(uuid: string, owner: string): Promise<boolean> {
    const holder = await this.calls.call("conversionLease", (c) => c.get(this.keys.conversionLease(uuid)));
    return holder === owner;
  }

  async releaseLease(uuid: string, owner: string): Promise<void> {
    const key = this.keys.conversionLease(uuid);
    await this.calls.call("releaseConversionLease", () => this.scripts.blConvRelease(key, owner));
  }

  async writeState(uuid: string, owner: string, state: ConversionState, at: number): Promise<StateWrite> {
    // Status and percent go first (the script compares them); then the state's other fields.
    const others = Object.entries(progressFields(state)).filter(([field]) => field !== "status" && field !== "percent");
    const recordKey = this.keys.conversion(uuid);
    const reply = await this.calls.write("saveConversionState", recordKey, (c) =>
      scriptsOn(c).blConvSave(
        recordKey,
        this.keys.conversionChanges(uuid),
        this.keys.conversionLease(uuid),
        owner,
        String(at),
        String(this.retentionSeconds),
        String(CONVERSION_CHANGES_MAXLEN),
        state.status,
        String(state.percent),
        ...others.flat(),
      ),
    );
    if (reply === "changed" || reply === "unchanged" || reply === "not-owner" || reply === "gone") return reply;
    throw new Error(`saveConversionState: unexpected script reply ${JSON.stringify(reply)}`);
  }

  async markAnnounced(uuid: string): Promise<void> {
    await this.calls.call("markConversionAnnounced", () =>
      this.scripts.blConvMarkAnnounced(this.keys.conversion(uuid)),
    );
  }

  async appendWhiteboardEvent(project: string, channel: string, fields: Fields): Promise<void> {
    const key = this.keys.whiteboardEvents(project, channel);
    await this.calls.write("announceConversion", key, (c) =>
      c.xadd(key, "MAXLEN", "~", String(WHITEBOARD_EVENTS_MAXLEN), "*", ...Object.entries(fields).flat()),
    );
  }

  async writeWebhook(id: string, uuid: string): Promise<void> {
    const key = this.keys.conversionWebhook(id);
    await this.calls.write("recordConversionWebhook", key, (c) => c.set(key, uuid, "EX", this.retentionSeconds));
  }

  async readWebhook(id: string): Promise<string | undefined> {
    const key = this.keys.conversionWebhook(id);
    const uuid = await this.calls.call("conversionWebhookTask", (c) =>
      c.get(key).catch(orIfWrongType<string | null>(null)),
    );
    return uuid ?? undefined;
  }

  async advanceDue(uuid: string, at: number): Promise<boolean> {
    const key = this.keys.conversionsDue();
    const reply = await this.calls.call("wakeConversion", () => this.scripts.blConvWake(key, String(at), uuid));
    return reply === 1;
  }

  async readChanges(uuid: string, afterId: string, count: number): Promise<Array<{ id: string; fields: Fields }>> {
    const key = this.keys.conversionChanges(uuid);
    const entries = await this.calls.call("readConversionChanges", (c) =>
      c.xrange(key, `(${afterId}`, "+", "COUNT", count).catch(orIfWrongType<[string, string[]][]>([])),
    );
    return entries.map(([id, pairs]) => ({ id, fields: pairsToFields(pairs) }));
  }
}
