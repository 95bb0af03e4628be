/**
 * The passphrase guard of a deployment without a guessing limit
 * (GUESS_LIMIT=0): every call looks its passphrase up at once, and the wrong
 * ones are only counted.
 */
import type { Caller } from "./ports.js";
import {
  DONE,
  type GuardObserver,
  type Guess,
  type LookedUp,
  type PassphraseGuard,
  type PassphraseLookup,
  UNOBSERVED,
} from "./passphrase-guard.js";

/** The guard that never refuses (GUESS_LIMIT=0); it still counts wrong passphrases. */
export class NoGuard implements PassphraseGuard {
  private observer = UNOBSERVED;
  /** One for every call: nothing to give back, a miss only counted. */
  private readonly guess: Guess = { giveBack: () => DONE, keep: () => this.miss() };

  async lookUp(caller: Caller, passphrase: string, lookup: PassphraseLookup): Promise<LookedUp> {
    return { guess: this.guess, record: await lookup(caller.project, passphrase) };
  }

  observe(observer: GuardObserver): void {
    this.observer = observer;
  }

  private miss(): Promise<void> {
    this.observer.onMiss();
    return DONE;
  }
}

/** A guard that never refuses, for tests and tools that want none. */
export const noGuard: PassphraseGuard = new NoGuard();
