/**
 * The guessing limit's sliding window as both stores answer it: what the
 * Redis script (TAKE_GUESS in redis/scripts.ts) answers, turned into the
 * port's shape, and the same steps on the in-memory store's sorted set.
 */
import type { GuessTaken } from "../services/ports.js";

const GRANTED: GuessTaken = { granted: true };

/** 0 (granted) or the milliseconds until a guess frees up, as the port tells it. */
export function guessTaken(waitMs: number): GuessTaken {
  // Rounded up: a caller that waits as told is not refused again.
  return waitMs <= 0 ? GRANTED : { granted: false, retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)) };
}

/**
 * TAKE_GUESS on a sorted set of slot → time taken (ms): drops the guesses
 * older than the window, then adds `slot` at `now` when fewer than `limit`
 * are left. Answers as the script does: 0, or the milliseconds to wait.
 */
export function takeGuessIn(
  guesses: Map<string, number>,
  slot: string,
  limit: number,
  windowMs: number,
  now: number,
): number {
  let oldest = Number.POSITIVE_INFINITY;
  for (const [member, at] of guesses) {
    if (at <= now - windowMs) guesses.delete(member);
    else oldest = Math.min(oldest, at);
  }
  if (guesses.size >= limit) return guesses.size === 0 ? windowMs : Math.max(1, oldest + windowMs - now);
  guesses.set(slot, now);
  return 0;
}
