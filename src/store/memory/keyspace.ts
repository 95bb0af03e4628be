/**
 * The in-memory store's data: a tiny Redis-like key space of strings, hashes,
 * streams and sorted sets, with expiry on access as in Redis. The in-memory store keeps
 * the documented records here under the same keys and fields as Redis; tests
 * read and write it raw, the way another service would write Redis.
 */
import { Failure } from "../../services/failure.js";
import type { Fields } from "../schema/channel-records.js";

export interface StreamEntry {
  readonly id: string;
  readonly fields: Fields;
}

export type StreamValue = {
  type: "stream";
  entries: StreamEntry[];
  lastMs: number;
  lastSeq: number;
  /** Entries ever appended (XINFO `entries-added`); those no longer in `entries` were trimmed. */
  added: number;
  expiresAt?: number;
};

export type MemoryEntry =
  | { type: "string"; value: string; expiresAt?: number }
  | { type: "hash"; fields: Map<string, string>; expiresAt?: number }
  | { type: "zset"; scores: Map<string, number>; expiresAt?: number }
  | StreamValue;

export class MemoryKeyspace {
  private readonly entries = new Map<string, MemoryEntry>();

  /** `now`: milliseconds since the epoch; injectable so tests can move time (expiry). */
  constructor(readonly now: () => number = Date.now) {}

  /** The entry unless it is missing or has expired (expired entries go on access, as in Redis). */
  get(key: string): MemoryEntry | undefined {
    const entry = this.entries.get(key);
    if (entry?.expiresAt !== undefined && entry.expiresAt <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }

  set(key: string, entry: MemoryEntry): void {
    this.entries.set(key, entry);
  }

  delete(key: string): boolean {
    return this.entries.delete(key);
  }

  /** Every key, expired ones included (`get` tells). */
  keys(): IterableIterator<string> {
    return this.entries.keys();
  }

  /** Fields of a hash; a missing key or another type reads as empty (malformed = absent). */
  hashFields(key: string): Fields {
    const entry = this.get(key);
    return entry?.type === "hash" ? Object.fromEntries(entry.fields) : {};
  }

  /** The hash to write to, created when missing; another type fails as WRONGTYPE would. */
  writableHash(key: string): Map<string, string> {
    const entry = this.get(key);
    if (entry === undefined) {
      const fields = new Map<string, string>();
      this.entries.set(key, { type: "hash", fields });
      return fields;
    }
    if (entry.type !== "hash") throw wrongType(key);
    return entry.fields;
  }

  /** Fails as WRONGTYPE would when the key exists with another type; creates nothing. */
  checkType(key: string, type: MemoryEntry["type"]): void {
    const entry = this.get(key);
    if (entry !== undefined && entry.type !== type) throw wrongType(key);
  }

  /** The sorted set's member → score map, created when missing; another type fails as WRONGTYPE would. */
  writableSortedSet(key: string): Map<string, number> {
    const entry = this.get(key);
    if (entry === undefined) {
      const scores = new Map<string, number>();
      this.entries.set(key, { type: "zset", scores });
      return scores;
    }
    if (entry.type !== "zset") throw wrongType(key);
    return entry.scores;
  }

  /** Like PEXPIRE: the key (when it exists) goes `ms` from now. */
  expireIn(key: string, ms: number): void {
    const entry = this.get(key);
    if (entry) entry.expiresAt = this.now() + ms;
  }

  /** The stream to append to (a new one is not stored until `append`); another type fails as WRONGTYPE would. */
  writableStream(key: string): StreamValue {
    const entry = this.get(key);
    if (entry === undefined) return { type: "stream", entries: [], lastMs: 0, lastSeq: -1, added: 0 };
    if (entry.type !== "stream") throw wrongType(key);
    return entry;
  }

  /** XADD with `*` ids (ms-seq, strictly increasing) and an exact MAXLEN cap; answers the new entry's id. */
  append(key: string, stream: StreamValue, fields: Fields, maxlen: number): string {
    const now = this.now();
    if (now > stream.lastMs) {
      stream.lastMs = now;
      stream.lastSeq = 0;
    } else {
      stream.lastSeq++;
    }
    const id = `${stream.lastMs}-${stream.lastSeq}`;
    stream.entries.push({ id, fields });
    stream.added++;
    const excess = stream.entries.length - maxlen;
    if (excess > 0) stream.entries.splice(0, excess);
    this.entries.set(key, stream);
    return id;
  }
}

/** What Redis answers (WRONGTYPE) maps to `unavailable` in the Redis store; do the same. */
function wrongType(key: string): Failure {
  return new Failure("unavailable", {
    cause: new Error(`WRONGTYPE Operation against a key holding the wrong kind of value (${key})`),
  });
}
