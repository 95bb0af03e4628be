/**
 * Positions in a channel's mute event stream. A position is a stream entry id
 * (`<ms>-<seq>`, both unsigned 64-bit decimals, as Redis writes them) and
 * means "every event up to and including this id": reading after it is
 * exclusive. Ids are kept as normalized decimal strings (no leading zeros),
 * which compare exactly without converting to numbers.
 */

/** The position before every event. */
export const STREAM_START = "0-0";

const U64_MAX = 18_446_744_073_709_551_615n;
const ID = /^(\d{1,20})-(\d{1,20})$/;

/** The id in normalized form, or undefined when it is not a stream id within 64 bits. */
export function normalizeStreamId(text: string): string | undefined {
  const m = ID.exec(text);
  if (m === null) return undefined;
  const ms = BigInt(m[1] as string);
  const seq = BigInt(m[2] as string);
  if (ms > U64_MAX || seq > U64_MAX) return undefined;
  return `${ms}-${seq}`;
}

/** Negative, zero or positive as `a` is before, at or after `b` (both normalized). */
export function compareStreamIds(a: string, b: string): number {
  const da = a.indexOf("-");
  const db = b.indexOf("-");
  return compareDecimal(a.slice(0, da), b.slice(0, db)) || compareDecimal(a.slice(da + 1), b.slice(db + 1));
}

export function laterStreamId(a: string, b: string): string {
  return compareStreamIds(a, b) >= 0 ? a : b;
}

export function earlierStreamId(a: string, b: string): string {
  return compareStreamIds(a, b) <= 0 ? a : b;
}

/**
 * A position covering only events before millisecond `ms`: `<ms - 1>-0`, a
 * lower bound (resuming there may repeat other events of millisecond ms - 1).
 */
export function positionBefore(ms: number): string {
  return ms <= 0 ? STREAM_START : `${Math.floor(ms) - 1}-0`;
}

/** The two halves of a normalized id, as 64-bit integers. */
export function streamIdParts(id: string): { ms: bigint; seq: bigint } {
  const d = id.indexOf("-");
  return { ms: BigInt(id.slice(0, d)), seq: BigInt(id.slice(d + 1)) };
}

export function streamIdOf(ms: bigint, seq: bigint): string {
  return `${ms}-${seq}`;
}

/** Whether `ms` and `seq` form an id within 64 bits. */
export function fitsStreamId(ms: bigint, seq: bigint): boolean {
  return ms >= 0n && seq >= 0n && ms <= U64_MAX && seq <= U64_MAX;
}

function compareDecimal(a: string, b: string): number {
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}
