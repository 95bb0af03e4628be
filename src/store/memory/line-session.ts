/**
 * One call's steps on one channel of the in-memory line (line.ts), as the
 * Lua prelude of the Redis line scripts defines them
 * (src/store/redis/line-scripts.ts): the same keys, fields and order.
 */
import type { LineCall, LineLimits, LinePolicy, MuteSetter } from "../../services/pstn/line-ports.js";
import type { ChannelRef } from "../../services/ports.js";
import { type Fields, muteFlag, muteMetaValue } from "../schema/channel-records.js";
import { type KeySchema, MUTE_EVENTS_MAXLEN } from "../schema/keys.js";
import { type LineRecord, parseLineRecord, parseMeta, parsePolicy } from "../schema/line-records.js";
import type { MemoryKeyspace } from "./keyspace.js";

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

type HashName = "mute" | "meta" | "line" | "policy";

const EMPTY: ReadonlyMap<string, string> = new Map();
const EMPTY_LEASES: ReadonlyMap<string, number> = new Map();

/** One call's steps on one channel, as the Lua prelude defines them. */
export class LineSession {
  lastId: string | undefined;
  private readonly k: ReturnType<KeySchema["channelKeys"]>;

  constructor(
    private readonly data: MemoryKeyspace,
    keys: KeySchema,
    private readonly call: LineCall,
    private readonly limits: LineLimits,
    private readonly publish: (ref: ChannelRef, eventId: string) => void,
  ) {
    this.k = keys.channelKeys(call.project, call.channel);
    for (const key of [this.k.mute, this.k.meta, this.k.line, this.k.policy]) data.checkType(key, "hash");
    data.checkType(this.k.leases, "zset");
    data.writableStream(this.k.events); // checks the type, creates nothing
  }

  /** A hash to read: nothing is created for it. */
  hash(name: HashName): ReadonlyMap<string, string> {
    const entry = this.data.get(this.k[name]);
    return entry?.type === "hash" ? entry.fields : EMPTY;
  }

  /** A hash to write, created when missing. */
  writable(name: HashName): Map<string, string> {
    return this.data.writableHash(this.k[name]);
  }

  /** The leases to read: nothing is created for them. */
  leases(): ReadonlyMap<string, number> {
    const entry = this.data.get(this.k.leases);
    return entry?.type === "zset" ? entry.scores : EMPTY_LEASES;
  }

  /** Ends a participant's lease (the key goes with its last member, as in Redis). */
  endLease(uid: string): void {
    const leases = this.data.writableSortedSet(this.k.leases);
    leases.delete(uid);
    if (leases.size === 0) this.data.delete(this.k.leases);
  }

  /** Uids on the line, ordered as ZRANGE orders them (by lease, then uid). */
  onLine(): string[] {
    return [...this.leases()].sort(([a, x], [b, y]) => x - y || (a < b ? -1 : a > b ? 1 : 0)).map(([uid]) => uid);
  }

  flag(uid: string): "1" | "0" {
    return this.hash("mute").get(uid) === "1" ? "1" : "0";
  }

  record(uid: string): LineRecord | undefined {
    return parseLineRecord(this.hash("line").get(uid));
  }

  save(uid: string, r: Mutable<LineRecord>): void {
    this.writable("line").set(uid, JSON.stringify(r));
  }

  lease(uid: string): void {
    this.data.writableSortedSet(this.k.leases).set(uid, this.data.now() + this.limits.leaseMs);
  }

  setter(uid: string): MuteSetter {
    return parseMeta(this.hash("meta").get(uid)).setter ?? "host";
  }

  policy(): LinePolicy {
    return parsePolicy(Object.fromEntries(this.hash("policy")));
  }

  emit(fields: Fields): string {
    const f: Record<string, string> = { ...fields, by: this.call.by, at: String(this.call.at) };
    // The stream's documented field order: kind first, as the scripts write it.
    const ordered: Record<string, string> = {};
    for (const name of ["kind", "uid", "mute", "by", "at"]) if (f[name] !== undefined) ordered[name] = f[name];
    Object.assign(ordered, f);
    this.lastId = this.data.append(this.k.events, this.data.writableStream(this.k.events), ordered, MUTE_EVENTS_MAXLEN);
    return this.lastId;
  }

  setMute(uid: string, mute: "1" | "0", setter: MuteSetter, all = false): void {
    this.writable("mute").set(uid, mute);
    const id = this.emit({
      uid,
      mute,
      ...(setter === "host" ? {} : { setter }),
      ...(all ? { all: "1" } : {}),
    });
    this.writable("meta").set(uid, muteMetaValue(this.call, id, setter === "host" ? undefined : setter));
  }

  setPolicy(p: LinePolicy): void {
    const was = this.policy();
    if (p.muteOnJoin === was.muteOnJoin && p.allowSelfUnmute === was.allowSelfUnmute) return;
    const fields = { mute_on_join: muteFlag(p.muteOnJoin), allow_self_unmute: muteFlag(p.allowSelfUnmute) };
    for (const [f, v] of Object.entries(fields)) this.writable("policy").set(f, v);
    this.emit({ kind: "policy", uid: "", mute: "0", ...fields });
  }

  join(uid: string, seq: string, caller: string, joined: number): boolean {
    if (this.leases().size >= this.limits.maxLine) return false;
    this.save(uid, { on: 1, seq, caller, joined, hand: 0 });
    this.lease(uid);
    const byPolicy = this.policy().muteOnJoin && this.flag(uid) === "0";
    this.emit({
      kind: "join",
      uid,
      mute: byPolicy ? "1" : this.flag(uid),
      caller,
      ...(byPolicy ? { setter: "policy" } : {}),
    });
    if (byPolicy) this.setMute(uid, "1", "policy");
    return true;
  }

  leave(uid: string, r: LineRecord, reason: string): void {
    const { hand_at: _, ...kept } = r;
    this.save(uid, { ...kept, on: 0, hand: 0 });
    this.endLease(uid);
    this.emit({ kind: "leave", uid, mute: this.flag(uid), reason });
  }

  /** Announces the last event and gives the written keys the channel's expiry, as the scripts' `finish`. */
  finish(): void {
    if (this.lastId !== undefined) this.publish(this.call, this.lastId);
    const expiresAt = this.call.expireAt ?? this.data.get(this.k.record)?.expiresAt;
    if (expiresAt === undefined) return;
    for (const key of [this.k.mute, this.k.meta, this.k.events, this.k.line, this.k.leases, this.k.policy])
      this.data.expireIn(key, expiresAt - this.data.now());
  }
}
