/**
 * The embedded store of the demo mode and of service tests. It keeps the same
 * documented keys and fields as Redis (a tiny hash/stream key space), so it
 * passes the same contract suite and its contents can be inspected key by key.
 *
 * `setUnavailable(true)` makes every call fail with `Failure("unavailable")`,
 * which lets service tests exercise the 503 path without a Redis.
 */
import { Failure } from "../services/failure.js";
import type {
  AdminStore,
  ConversionTaskRecord,
  MuteChange,
  MuteEvent,
  PassphraseRecord,
  WhiteboardSettings,
} from "../services/ports.js";
import {
  type CreateChannelInput,
  channelPassphrases,
  checkProject,
  checkSettings,
  eventCount,
  passphraseConflict,
} from "./admin-checks.js";
import { CONVERSION_TTL_SECONDS, type KeySchema, keySchema, MUTE_EVENTS_MAXLEN } from "./keys.js";
import {
  conversionFields,
  type Fields,
  muteEventFields,
  muteFlag,
  parseConversion,
  parseMuteEvent,
  parseMuteState,
  parsePassphrase,
  parseWhiteboard,
  passphraseFields,
  whiteboardFields,
} from "./records.js";

export interface MemoryStoreOptions {
  keyPrefix?: string;
  /** Milliseconds since the epoch; injectable so tests can move time (expiry). */
  now?: () => number;
}

export interface StreamEntry {
  readonly id: string;
  readonly fields: Fields;
}

type Entry =
  | { type: "string"; value: string; expiresAt?: number }
  | { type: "hash"; fields: Map<string, string>; expiresAt?: number }
  | { type: "stream"; entries: StreamEntry[]; lastMs: number; lastSeq: number; expiresAt?: number };

export class MemoryStore implements AdminStore {
  readonly keys: KeySchema;
  private readonly now: () => number;
  private readonly data = new Map<string, Entry>();
  private unavailable = false;
  private closed = false;

  constructor(options: MemoryStoreOptions = {}) {
    this.keys = keySchema(options.keyPrefix);
    this.now = options.now ?? Date.now;
  }

  /** While on, every call throws `Failure("unavailable")`, as a Redis outage would. */
  setUnavailable(unavailable: boolean): void {
    this.unavailable = unavailable;
  }

  async lookupPassphrase(passphrase: string): Promise<PassphraseRecord | undefined> {
    this.guard();
    return parsePassphrase(this.hashFields(this.keys.passphrase(passphrase)));
  }

  async getWhiteboard(project: string): Promise<WhiteboardSettings | undefined> {
    this.guard();
    return parseWhiteboard(this.hashFields(this.keys.whiteboard(project)));
  }

  async setMute(change: MuteChange): Promise<void> {
    this.guard();
    const muteKey = this.keys.pstnMute(change.project, change.channel);
    const eventsKey = this.keys.pstnEvents(change.project, change.channel);
    // Check both types before writing either, so a bad key never leaves half a change.
    const stream = this.writableStream(eventsKey); // creates nothing yet
    const hash = this.writableHash(muteKey);
    hash.set(change.uid, muteFlag(change.mute));
    this.append(eventsKey, stream, muteEventFields(change));
  }

  async recordConversion(task: ConversionTaskRecord): Promise<void> {
    this.guard();
    const key = this.keys.conversion(task.uuid);
    const hash = this.writableHash(key);
    for (const [field, value] of Object.entries(conversionFields(task))) hash.set(field, value);
    const entry = this.data.get(key);
    if (entry) entry.expiresAt = this.now() + CONVERSION_TTL_SECONDS * 1000;
  }

  async recordPassphraseMiss(callerKey: string, windowSeconds: number): Promise<void> {
    this.guard();
    const key = this.keys.guesses(callerKey);
    const entry = this.live(key);
    if (entry?.type === "string") {
      entry.value = String(Number(entry.value) + 1);
      return;
    }
    this.data.set(key, { type: "string", value: "1", expiresAt: this.now() + windowSeconds * 1000 });
  }

  async passphraseMisses(callerKey: string): Promise<{ count: number; resetSeconds: number }> {
    this.guard();
    const entry = this.live(this.keys.guesses(callerKey));
    if (entry?.type !== "string" || entry.expiresAt === undefined) return { count: 0, resetSeconds: 0 };
    return { count: Number(entry.value), resetSeconds: Math.max(1, Math.ceil((entry.expiresAt - this.now()) / 1000)) };
  }

  async ping(): Promise<void> {
    this.guard();
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  async createChannel(input: CreateChannelInput): Promise<void> {
    this.guard();
    const wanted = channelPassphrases(input);
    const keep = new Set<string>();
    for (const { passphrase, record } of wanted) {
      const key = this.keys.passphrase(passphrase);
      const existing = this.hashFields(key);
      if (
        existing.project !== undefined &&
        (existing.project !== record.project || existing.channel !== record.channel)
      ) {
        throw passphraseConflict(record.role, { project: existing.project, channel: existing.channel ?? "" });
      }
      keep.add(key);
    }
    for (const { passphrase, record } of wanted) {
      this.data.set(this.keys.passphrase(passphrase), {
        type: "hash",
        fields: new Map(Object.entries(passphraseFields(record))),
      });
    }
    // The channel ends up opened by exactly the given passphrases (rotation).
    for (const key of this.channelPassphraseKeys(input.project, input.channel)) {
      if (!keep.has(key)) this.data.delete(key);
    }
  }

  async deleteChannel(project: string, channel: string): Promise<number> {
    this.guard();
    let deleted = 0;
    const keys = [
      ...this.channelPassphraseKeys(project, channel),
      this.keys.pstnMute(project, channel),
      this.keys.pstnEvents(project, channel),
    ];
    for (const key of keys) {
      if (this.live(key) && this.data.delete(key)) deleted++;
    }
    return deleted;
  }

  async setWhiteboard(project: string, settings: WhiteboardSettings): Promise<void> {
    this.guard();
    checkProject(project);
    checkSettings(settings);
    const hash = this.writableHash(this.keys.whiteboard(project));
    const { set, remove } = whiteboardFields(settings);
    for (const field of remove) hash.delete(field);
    for (const [field, value] of Object.entries(set)) hash.set(field, value);
  }

  async clearWhiteboard(project: string): Promise<void> {
    this.guard();
    this.data.delete(this.keys.whiteboard(project));
  }

  async getMuteState(project: string, channel: string): Promise<Record<string, boolean>> {
    this.guard();
    return parseMuteState(this.hashFields(this.keys.pstnMute(project, channel)));
  }

  async getMuteEvents(project: string, channel: string, count?: number): Promise<MuteEvent[]> {
    this.guard();
    const n = eventCount(count);
    // Like XREVRANGE + - COUNT n: the newest n entries, malformed ones then skipped.
    const entries = (this.rawStream(this.keys.pstnEvents(project, channel)) ?? []).slice(-n).reverse();
    return entries.flatMap((entry) => parseMuteEvent(entry.id, entry.fields) ?? []);
  }

  async getConversion(uuid: string): Promise<ConversionTaskRecord | undefined> {
    this.guard();
    return parseConversion(uuid, this.hashFields(this.keys.conversion(uuid)));
  }

  // --- raw key access, like a Redis client would have (tests, demo seeding) ---

  /** A hash's fields, or undefined when the key is missing, expired or no hash. */
  rawHash(key: string): Record<string, string> | undefined {
    const entry = this.live(key);
    return entry?.type === "hash" ? Object.fromEntries(entry.fields) : undefined;
  }

  /** Writes hash fields as another service would (no validation). */
  writeRawHash(key: string, fields: Fields): void {
    const hash = this.writableHash(key);
    for (const [field, value] of Object.entries(fields)) hash.set(field, value);
  }

  /** Writes a plain string value (tests use it to plant a record of the wrong type). */
  writeRawString(key: string, value: string): void {
    this.data.set(key, { type: "string", value });
  }

  /** A stream's entries, oldest first, or undefined when the key is missing or no stream. */
  rawStream(key: string): readonly StreamEntry[] | undefined {
    const entry = this.live(key);
    return entry?.type === "stream" ? entry.entries : undefined;
  }

  /** Like Redis TTL: seconds left, -1 without expiry, -2 when missing. */
  ttlSeconds(key: string): number {
    const entry = this.live(key);
    if (!entry) return -2;
    if (entry.expiresAt === undefined) return -1;
    return Math.ceil((entry.expiresAt - this.now()) / 1000);
  }

  deleteKey(key: string): boolean {
    return this.data.delete(key);
  }

  // --- internals ---

  private guard(): void {
    if (this.unavailable || this.closed) {
      throw new Failure("unavailable", { cause: new Error(this.closed ? "store closed" : "store set unavailable") });
    }
  }

  /** The entry unless it has expired (expired entries go on access, as in Redis). */
  private live(key: string): Entry | undefined {
    const entry = this.data.get(key);
    if (entry?.expiresAt !== undefined && entry.expiresAt <= this.now()) {
      this.data.delete(key);
      return undefined;
    }
    return entry;
  }

  /** Fields of a hash; a missing key or another type reads as empty (malformed = absent). */
  private hashFields(key: string): Fields {
    return this.rawHash(key) ?? {};
  }

  private writableHash(key: string): Map<string, string> {
    const entry = this.live(key);
    if (entry === undefined) {
      const fields = new Map<string, string>();
      this.data.set(key, { type: "hash", fields });
      return fields;
    }
    if (entry.type !== "hash") throw wrongType(key);
    return entry.fields;
  }

  private writableStream(key: string): Extract<Entry, { type: "stream" }> {
    const entry = this.live(key);
    if (entry === undefined) return { type: "stream", entries: [], lastMs: 0, lastSeq: -1 };
    if (entry.type !== "stream") throw wrongType(key);
    return entry;
  }

  /** XADD with `*` ids (ms-seq, strictly increasing) and an exact MAXLEN cap. */
  private append(key: string, stream: Extract<Entry, { type: "stream" }>, fields: Fields): void {
    const now = this.now();
    if (now > stream.lastMs) {
      stream.lastMs = now;
      stream.lastSeq = 0;
    } else {
      stream.lastSeq++;
    }
    stream.entries.push({ id: `${stream.lastMs}-${stream.lastSeq}`, fields });
    const excess = stream.entries.length - MUTE_EVENTS_MAXLEN;
    if (excess > 0) stream.entries.splice(0, excess);
    this.data.set(key, stream);
  }

  private channelPassphraseKeys(project: string, channel: string): string[] {
    const prefix = `${this.keys.prefix}pass:`; // what the Redis store's SCAN pattern matches
    const keys: string[] = [];
    for (const key of this.data.keys()) {
      if (!key.startsWith(prefix)) continue;
      const record = this.rawHash(key);
      if (record?.project === project && record.channel === channel) keys.push(key);
    }
    return keys;
  }
}

/** What Redis answers (WRONGTYPE) maps to `unavailable` in the Redis store; do the same. */
function wrongType(key: string): Failure {
  return new Failure("unavailable", {
    cause: new Error(`WRONGTYPE Operation against a key holding the wrong kind of value (${key})`),
  });
}
