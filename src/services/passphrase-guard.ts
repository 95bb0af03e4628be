/**
 * Slows down passphrase guessing: a caller (project + subject of its token)
 * gets at most `attempts` wrong passphrases judged in any `windowSeconds`;
 * beyond that it is refused with RESOURCE_EXHAUSTED / 429 until a guess
 * leaves the window. Every call that names a passphrase takes a guess before
 * its answer is given, atomically in the store (Redis in production), so a
 * burst sent at once, over one connection or many, to one instance or
 * several, is judged no more often than one sent in turn. A right passphrase
 * gives its guess back.
 */
import { randomBytes } from "node:crypto";
import { Failure } from "./failure.js";
import type { Caller, Store } from "./ports.js";

/** A guess taken for one call: kept when the passphrase was wrong, given back when it was right. */
export interface Guess {
  /**
   * Gives the guess back. Never throws: a guess that could not be given back
   * only costs its caller one guess until it leaves the window.
   */
  giveBack(): Promise<void>;
}

export interface PassphraseGuard {
  /** Takes one guess for the caller; throws `Failure("rate_limited")` when none is left. */
  take(caller: Caller): Promise<Guess>;
}

const GIVEN_BACK = Promise.resolve();
const NOTHING_TO_GIVE_BACK: Guess = { giveBack: () => GIVEN_BACK };

/** The guard that never refuses (GUESS_LIMIT=0). */
export const noGuard: PassphraseGuard = {
  take: async () => NOTHING_TO_GIVE_BACK,
};

export class MissLimitGuard implements PassphraseGuard {
  /** Slots are this instance's prefix and a counter: unique across instances without a random draw per call. */
  private readonly instance = randomBytes(9).toString("base64url");
  private taken = 0;

  constructor(
    private readonly store: Store,
    private readonly limit: { readonly attempts: number; readonly windowSeconds: number },
  ) {}

  async take(caller: Caller): Promise<Guess> {
    const key = callerKey(caller);
    const slot = `${this.instance}.${(this.taken++).toString(36)}`;
    const got = await this.store.takeGuess(key, slot, this.limit.attempts, this.limit.windowSeconds);
    if (!got.granted) {
      throw new Failure("rate_limited", {
        detail: "too many wrong passphrases; retry later",
        retryAfterSeconds: got.retryAfterSeconds,
      });
    }
    return new TakenGuess(this.store, key, slot);
  }
}

class TakenGuess implements Guess {
  constructor(
    private readonly store: Store,
    private readonly key: string,
    private readonly slot: string,
  ) {}

  giveBack(): Promise<void> {
    return this.store.returnGuess(this.key, this.slot).catch(() => {});
  }
}

/** JSON keeps the two parts apart whatever characters they hold. */
function callerKey(caller: Caller): string {
  return JSON.stringify([caller.project, caller.subject]);
}
