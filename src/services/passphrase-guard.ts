/**
 * Slows down passphrase guessing: a caller (project + subject of its token)
 * that presents `attempts` wrong passphrases within a window is refused with
 * RESOURCE_EXHAUSTED / 429 until the window ends. The counters live in the
 * store (Redis in production), so the limit holds across instances.
 */
import { Failure } from "./failure.js";
import type { Caller, Store } from "./ports.js";

export interface PassphraseGuard {
  /** Throws `Failure("rate_limited")` while the caller is locked out. */
  check(caller: Caller): Promise<void>;
  /** Counts one wrong passphrase. */
  recordMiss(caller: Caller): Promise<void>;
}

/** The guard that never refuses (GUESS_LIMIT=0). */
export const noGuard: PassphraseGuard = {
  check: async () => {},
  recordMiss: async () => {},
};

export class MissLimitGuard implements PassphraseGuard {
  constructor(
    private readonly store: Store,
    private readonly limit: { readonly attempts: number; readonly windowSeconds: number },
  ) {}

  async check(caller: Caller): Promise<void> {
    const { count, resetSeconds } = await this.store.passphraseMisses(callerKey(caller));
    if (count >= this.limit.attempts) {
      throw new Failure("rate_limited", {
        detail: "too many wrong passphrases; retry later",
        retryAfterSeconds: Math.max(1, resetSeconds),
      });
    }
  }

  async recordMiss(caller: Caller): Promise<void> {
    await this.store.recordPassphraseMiss(callerKey(caller), this.limit.windowSeconds);
  }
}

/** JSON keeps the two parts apart whatever characters they hold. */
function callerKey(caller: Caller): string {
  return JSON.stringify([caller.project, caller.subject]);
}
