/**
 * The cursor of a mute-event watch: where it stands on every watched channel,
 * so a client that resumes with it misses nothing (docs/architecture.md,
 * "Watching mute events"). Stream ids of different channels do not order each
 * other, so one id cannot say it for several channels.
 *
 * - One channel: the cursor is the event id (a GetPstnState `as_of_event_id`
 *   works as `after` too).
 * - Several channels: `v1.` + base64url of a base position B (every channel
 *   not listed is delivered up to B), then, for the channels delivered beyond
 *   B, a 4-byte hash of the channel id and that channel's position (as
 *   varints, its milliseconds relative to B's). B moves up as the watch hub
 *   learns that every channel is delivered that far, so only the channels
 *   that had events lately are listed: a few bytes each.
 *
 * Positions only ever err low: a hash two channels of a watch share, or a
 * channel a cursor does not list, resumes from B — events again, never
 * events lost. As `after`, an event id means every channel from that id on.
 */
import { createHash } from "node:crypto";
import { Failure } from "../failure.js";
import {
  compareStreamIds,
  fitsStreamId,
  normalizeStreamId,
  STREAM_START,
  streamIdOf,
  streamIdParts,
} from "./stream-ids.js";

const PREFIX = "v1.";

/** Where a watch starts: nothing (only new events), or a position per channel. */
export type WatchStart =
  | { readonly kind: "now" }
  | { readonly kind: "after"; readonly base: string; readonly positions: ReadonlyMap<number, string> };

/** The 4-byte hash a cursor lists a channel by. */
export function channelHash(channelId: string): number {
  return createHash("sha256").update(channelId, "utf8").digest().readUInt32BE(0);
}

/** Reads `after` for a watch of these channels (by index); `invalid` when it is neither an id nor a cursor. */
export function decodeAfter(after: string, hashes: readonly number[]): WatchStart {
  if (after === "") return { kind: "now" };
  const id = normalizeStreamId(after);
  if (id !== undefined) return { kind: "after", base: id, positions: new Map() };
  const bytes = after.startsWith(PREFIX) ? Buffer.from(after.slice(PREFIX.length), "base64url") : undefined;
  const decoded = bytes === undefined ? undefined : readCursor(bytes);
  if (decoded === undefined) {
    throw new Failure("invalid", { detail: "after: not an event id or a cursor this server made" });
  }
  const byHash = new Map<number, number | "shared">();
  for (const [i, h] of hashes.entries()) byHash.set(h, byHash.has(h) ? "shared" : i);
  const positions = new Map<number, string>();
  for (const [hash, position] of decoded.listed) {
    const index = byHash.get(hash);
    if (typeof index === "number") positions.set(index, position);
  }
  return { kind: "after", base: decoded.base, positions };
}

/** The cursor of a watch of several channels: base `base`, and `listed` (hash → position, each after the base). */
export function encodeCursor(base: string, listed: Iterable<readonly [number, string]>): string {
  const { ms: baseMs, seq: baseSeq } = streamIdParts(base);
  const out: number[] = [];
  writeVarint(out, baseMs);
  writeVarint(out, baseSeq);
  for (const [hash, position] of listed) {
    const { ms, seq } = streamIdParts(position);
    out.push((hash >>> 24) & 0xff, (hash >>> 16) & 0xff, (hash >>> 8) & 0xff, hash & 0xff);
    writeVarint(out, ms - baseMs);
    writeVarint(out, seq);
  }
  return PREFIX + Buffer.from(out).toString("base64url");
}

function readCursor(bytes: Buffer): { base: string; listed: Array<[number, string]> } | undefined {
  const at = { offset: 0 };
  const baseMs = readVarint(bytes, at);
  const baseSeq = readVarint(bytes, at);
  if (baseMs === undefined || baseSeq === undefined || !fitsStreamId(baseMs, baseSeq)) return undefined;
  const listed: Array<[number, string]> = [];
  while (at.offset < bytes.length) {
    if (at.offset + 4 > bytes.length) return undefined;
    const hash = bytes.readUInt32BE(at.offset);
    at.offset += 4;
    const delta = readVarint(bytes, at);
    const seq = readVarint(bytes, at);
    if (delta === undefined || seq === undefined || !fitsStreamId(baseMs + delta, seq)) return undefined;
    listed.push([hash, streamIdOf(baseMs + delta, seq)]);
  }
  return { base: streamIdOf(baseMs, baseSeq), listed };
}

function writeVarint(out: number[], value: bigint): void {
  let v = value;
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
}

/** A LEB128 integer of at most 10 bytes (64 bits), or undefined when truncated or too long. */
function readVarint(bytes: Buffer, at: { offset: number }): bigint | undefined {
  let value = 0n;
  for (let shift = 0n; shift < 70n; shift += 7n) {
    const byte = bytes[at.offset++];
    if (byte === undefined) return undefined;
    value |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return value;
  }
  return undefined;
}

/**
 * Where one watch stands, as its events are handed to the client: the cursor
 * each event carries. Channels are known by their index in the watch.
 */
export class WatchCursor {
  private base: string;
  /** Channels delivered beyond the base, of a watch of several channels (made when first needed: most watches have one). */
  private listed: Map<number, string> | undefined;

  /** `start`: the watch's start (for "now", the base is the stream start until `started` and `raise` say more). */
  constructor(
    private readonly hashes: readonly number[],
    start: WatchStart,
  ) {
    if (start.kind === "now") this.base = STREAM_START;
    else if (this.single) this.base = start.positions.get(0) ?? start.base;
    else {
      this.base = start.base;
      for (const [i, p] of start.positions) this.listPosition(i, p);
    }
  }

  /** Where channel `index` resumes. */
  position(index: number): string {
    return this.listed?.get(index) ?? this.base;
  }

  /** The channel's start position became known (a watch from now on starts at each stream's end). */
  started(index: number, position: string): void {
    if (this.single) this.base = position;
    else this.listPosition(index, position);
  }

  /** An event of the channel is handed out. */
  delivered(index: number, eventId: string): void {
    if (this.single) this.base = eventId;
    else this.listPosition(index, eventId);
  }

  /** Every channel is delivered up to `position`: the base moves up to it (never down). */
  raise(position: string): void {
    if (this.single || compareStreamIds(position, this.base) <= 0) return;
    this.base = position;
    if (this.listed === undefined) return;
    for (const [i, p] of this.listed) if (compareStreamIds(p, position) <= 0) this.listed.delete(i);
  }

  encode(): string {
    if (this.single) return this.base;
    return encodeCursor(
      this.base,
      [...(this.listed ?? [])].map(([i, p]) => [this.hashes[i] as number, p] as const),
    );
  }

  private get single(): boolean {
    return this.hashes.length === 1;
  }

  private listPosition(index: number, position: string): void {
    if (compareStreamIds(position, this.base) <= 0) this.listed?.delete(index);
    else {
      this.listed ??= new Map();
      this.listed.set(index, position);
    }
  }
}
