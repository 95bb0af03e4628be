/**
 * Slows down passphrase guessing: a caller (project + subject) that keeps
 * presenting wrong passphrases is refused for a while. The limits live in the
 * store so they hold across instances; `NoGuard` switches the feature off.
 */
import type { Caller } from "./ports.js";

export interface PassphraseGuard {
  /** Throws `Failure("rate_limited")` while the caller is locked out. */
  check(caller: Caller): Promise<void>;
  /** Counts one wrong passphrase. */
  recordMiss(caller: Caller): Promise<void>;
}

export const noGuard: PassphraseGuard = {
  check: async () => {},
  recordMiss: async () => {},
};
