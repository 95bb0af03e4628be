/**
 * The guessing limit's sliding window as both stores answer it: what the
 * Redis scripts (TAKE_GUESS, KEEP_GUESS in redis/scripts.ts) answer, turned
 * into the port's shape, and the same steps on the in-memory store's sorted
 * set. A guess is a member named by its slot while its call is being judged,
 * and by its slot and KEPT once it counted as a miss: a full window whose
 * guesses are not all kept is one that calls in flight may still free up.
 */
import type { GuessTaken } from "../services/ports.js";

/** The mark a kept guess's member ends with (slots never contain it). */
export const KEPT = "!";

const GRANTED: GuessTaken = { granted: true };

/**
 * 0 (granted), or the milliseconds until a guess leaves the window: positive
 * when every guess in it is kept, negative when some are still being judged.
 */
export function guessTaken(waitMs: number): GuessTaken {
  if (waitMs === 0) return GRANTED;
  // Rounded up: a caller that waits as told is not refused again.
  return { granted: false, retryAfterSeconds: Math.max(1, Math.ceil(Math.abs(waitMs) / 1000)), held: waitMs < 0 };
}

/**
 * TAKE_GUESS on a sorted set of member → time taken (ms): drops the guesses
 * older than the window, then adds `slot` at `now` when fewer than `limit`
 * are left. Answers as the script does (see guessTaken).
 */
export function takeGuessIn(
  guesses: Map<string, number>,
  slot: string,
  limit: number,
  windowMs: number,
  now: number,
): number {
  let oldest = Number.POSITIVE_INFINITY;
  let kept = 0;
  for (const [member, at] of guesses) {
    if (at <= now - windowMs) {
      guesses.delete(member);
      continue;
    }
    oldest = Math.min(oldest, at);
    if (member.endsWith(KEPT)) kept++;
  }
  if (guesses.size >= limit) {
    const wait = guesses.size === 0 ? windowMs : Math.max(1, oldest + windowMs - now);
    return kept < guesses.size ? -wait : wait;
  }
  guesses.set(slot, now);
  return 0;
}

/** KEEP_GUESS: the slot's guess, if still in the window, counts as a miss from when it was taken. */
export function keepGuessIn(guesses: Map<string, number>, slot: string): void {
  const at = guesses.get(slot);
  if (at === undefined) return;
  guesses.delete(slot);
  guesses.set(slot + KEPT, at);
}
