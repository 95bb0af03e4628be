/**
 * The in-memory store's raw channel-directory operations, over its key space
 * under the documented keys and fields. Each runs to its end without yielding,
 * so it is as atomic as the Redis command or script it stands for; the order
 * of the steps lives in src/store/channels/steps.ts.
 */
import type { PassphraseRecord } from "../../services/ports.js";
import type { ChannelPrimitives, ClaimResult } from "../channels/primitives.js";
import { type Fields, passphraseFields } from "../schema/channel-records.js";
import { ADMIN_EVENTS_MAXLEN, type KeySchema } from "../schema/keys.js";
import type { MemoryKeyspace } from "./keyspace.js";

export class MemoryChannels implements ChannelPrimitives {
  /** `guard` throws `Failure("unavailable")` while the store is unavailable or closed. */
  constructor(
    private readonly data: MemoryKeyspace,
    private readonly keys: KeySchema,
    private readonly guard: () => void,
  ) {}

  async writeRecord(
    project: string,
    channel: string,
    mode: "create" | "update",
    fields: Fields,
    expireAt: number | undefined,
  ): Promise<boolean> {
    this.guard();
    const key = this.keys.channelRecord(project, channel);
    const exists = this.data.get(key) !== undefined;
    if (exists !== (mode === "update")) return false;
    const hash = this.data.writableHash(key);
    for (const [field, value] of Object.entries(fields)) hash.set(field, value);
    if (expireAt !== undefined) this.data.expireIn(key, expireAt - this.data.now());
    return true;
  }

  async dropRecordFields(project: string, channel: string, fields: readonly string[]): Promise<void> {
    this.guard();
    const key = this.keys.channelRecord(project, channel);
    const entry = this.data.get(key);
    if (entry?.type !== "hash") return;
    for (const field of fields) entry.fields.delete(field);
    if (entry.fields.size === 0) this.data.delete(key);
  }

  async readRecord(project: string, channel: string): Promise<Fields> {
    this.guard();
    return this.data.hashFields(this.keys.channelRecord(project, channel));
  }

  async index(project: string, channel: string): Promise<void> {
    this.guard();
    this.data.writableSortedSet(this.keys.channelIndex(project)).set(channel, 0);
  }

  async unindex(project: string, channel: string): Promise<void> {
    this.guard();
    const key = this.keys.channelIndex(project);
    const entry = this.data.get(key);
    if (entry?.type !== "zset") return;
    entry.scores.delete(channel);
    if (entry.scores.size === 0) this.data.delete(key);
  }

  async indexPage(project: string, after: string | undefined, limit: number): Promise<string[]> {
    this.guard();
    const entry = this.data.get(this.keys.channelIndex(project));
    if (entry?.type !== "zset") return [];
    // ZRANGEBYLEX compares bytes: sort by the UTF-8 bytes, not by UTF-16 units.
    const members = [...entry.scores.keys()].sort(compareBytes);
    const start = after === undefined ? 0 : members.findIndex((m) => compareBytes(m, after) > 0);
    return start < 0 ? [] : members.slice(start, start + limit);
  }

  async claimPassphrase(
    sha: string,
    record: PassphraseRecord,
    expireAt: number | undefined,
    keyId?: string,
  ): Promise<ClaimResult> {
    this.guard();
    const key = this.keys.passphraseByHash(sha);
    this.data.checkType(key, "hash");
    const owner = this.data.hashFields(key);
    if (owner.project !== undefined && (owner.project !== record.project || owner.channel !== record.channel)) {
      return { claimed: false, owner: { project: owner.project, channel: owner.channel ?? "" } };
    }
    const created = this.data.get(key) === undefined;
    const hash = this.data.writableHash(key);
    const fields = passphraseFields(expireAt === undefined ? record : { ...record, expireAt }, keyId);
    for (const [field, value] of Object.entries(fields)) hash.set(field, value);
    if (expireAt !== undefined) this.data.expireIn(key, expireAt - this.data.now());
    return { claimed: true, created };
  }

  async releasePassphrase(sha: string, project: string, channel: string): Promise<boolean> {
    this.guard();
    const key = this.keys.passphraseByHash(sha);
    const owner = this.data.hashFields(key);
    if (owner.project !== project || owner.channel !== channel) return false;
    return this.data.delete(key);
  }

  async readPassphrase(sha: string): Promise<Fields> {
    this.guard();
    return this.data.hashFields(this.keys.passphraseByHash(sha));
  }

  async removeChannelData(project: string, channel: string, withRecord: boolean): Promise<number> {
    this.guard();
    let removed = 0;
    for (const key of this.keys.channelDataKeys(project, channel)) {
      if (this.data.get(key) !== undefined && this.data.delete(key)) removed++;
    }
    if (withRecord) this.data.delete(this.keys.channelRecord(project, channel));
    return removed;
  }

  async appendAdminEvent(project: string, fields: Fields): Promise<void> {
    this.guard();
    const key = this.keys.adminEvents(project);
    this.data.append(key, this.data.writableStream(key), fields, ADMIN_EVENTS_MAXLEN);
  }

  async readWhiteboardRecord(project: string): Promise<Fields> {
    this.guard();
    return this.data.hashFields(this.keys.whiteboard(project));
  }

  /** Like SCAN MATCH: the cursor is the last key answered (keys in byte order), "0" at both ends. */
  async scan(pattern: string, cursor: string, count: number): Promise<{ cursor: string; keys: string[] }> {
    this.guard();
    const match = globMatcher(pattern);
    const all = [...this.data.keys()].filter((k) => this.data.get(k) !== undefined).sort(compareBytes);
    const from = cursor === "0" ? 0 : all.findIndex((k) => compareBytes(k, cursor) > 0);
    if (from < 0) return { cursor: "0", keys: [] };
    const batch = all.slice(from, from + count);
    const done = from + count >= all.length;
    return { cursor: done ? "0" : (batch.at(-1) ?? "0"), keys: batch.filter(match) };
  }
}

function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, "utf8"), Buffer.from(b, "utf8"));
}

/** A Redis glob (`*`, `?`, `\` escapes; what the key schema's patterns use) as a test. */
function globMatcher(pattern: string): (key: string) => boolean {
  let source = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === "\\" && i + 1 < pattern.length) source += escapeRegExp(pattern[++i] as string);
    else if (c === "*") source += "[\\s\\S]*";
    else if (c === "?") source += "[\\s\\S]";
    else source += escapeRegExp(c);
  }
  const re = new RegExp(`^${source}$`);
  return (key) => re.test(key);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}
