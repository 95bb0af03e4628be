/**
 * Slows down passphrase guessing: a caller (project + subject of its token)
 * gets at most `attempts` wrong passphrases judged in any `windowSeconds`;
 * beyond that it is refused with RESOURCE_EXHAUSTED / 429 until a guess
 * leaves the window. A call that names a passphrase takes a guess before its
 * answer is given, atomically in the store (Redis in production), so a burst
 * sent at once, over one connection or many, to one instance or several, is
 * judged no more often than one sent in turn. A right passphrase gives its
 * guess back, and makes its caller a proven holder of it: for a while, that
 * caller's calls with that passphrase take no guess at all, so a caller with
 * the right passphrase is never capped by the limit, however many of its
 * calls are in flight. A guesser cannot become a holder without a right
 * passphrase judged through a guess, so each candidate it tries still costs one.
 */
import { createHash, randomBytes } from "node:crypto";
import { LRUCache } from "lru-cache";
import { Failure } from "./failure.js";
import type { Caller, PassphraseRecord, Store } from "./ports.js";

/** The guess a call took: kept when the passphrase was refused, given back when it was right. */
export interface Guess {
  /**
   * The passphrase was right: gives the guess back and remembers the caller as
   * the passphrase's holder. Never throws: a guess that could not be given back
   * only costs its caller one guess until it leaves the window.
   */
  giveBack(): Promise<void>;
  /**
   * The passphrase was refused: the guess counts. A holder's call took none, so
   * it stops being one and takes its guess now; throws `Failure("rate_limited")`
   * when none is left, and the call answers that instead of its refusal.
   */
  keep(): Promise<void>;
}

/** A passphrase's record as the lookup found it, and the call's guess. */
export interface LookedUp {
  readonly guess: Guess;
  readonly record: PassphraseRecord | undefined;
}

export type PassphraseLookup = (passphrase: string) => Promise<PassphraseRecord | undefined>;

export interface PassphraseGuard {
  /**
   * Looks the passphrase up with a guess taken beside the lookup (one round
   * trip of latency), or with none for a proven holder. Throws
   * `Failure("rate_limited")` when a guess is needed and none is left.
   */
  lookUp(caller: Caller, passphrase: string, lookup: PassphraseLookup): Promise<LookedUp>;
}

export interface GuessLimit {
  readonly attempts: number;
  readonly windowSeconds: number;
  /** How long a caller stays a proven holder of a passphrase after its last right call with it; absent or 0: never one. */
  readonly provenSeconds?: number;
}

const DONE = Promise.resolve();
const NOTHING_TO_GIVE_BACK: Guess = { giveBack: () => DONE, keep: () => DONE };

/** The guard that never refuses (GUESS_LIMIT=0). */
export const noGuard: PassphraseGuard = {
  lookUp: async (_caller, passphrase, lookup) => ({ guess: NOTHING_TO_GIVE_BACK, record: await lookup(passphrase) }),
};

/** Proven holders each instance remembers, least recently used going first. */
export const PROVEN_HOLDERS_MAX = 10_000;

/** The seconds a refused caller is told to wait while its own calls in flight hold the guesses. */
const IN_FLIGHT_RETRY_SECONDS = 1;

export class MissLimitGuard implements PassphraseGuard {
  /** Slots are this instance's prefix and a counter: unique across instances without a random draw per call. */
  private readonly instance = randomBytes(9).toString("base64url");
  private taken = 0;
  /** Guesses this instance took and has not settled yet, by caller key. */
  private readonly inFlight = new Map<string, number>();
  readonly holders: ProvenHolders | undefined;

  constructor(
    private readonly store: Store,
    private readonly limit: GuessLimit,
    now: () => number = Date.now,
  ) {
    const seconds = limit.provenSeconds ?? 0;
    this.holders = seconds > 0 ? new ProvenHolders(seconds * 1000, PROVEN_HOLDERS_MAX, now) : undefined;
  }

  async lookUp(caller: Caller, passphrase: string, lookup: PassphraseLookup): Promise<LookedUp> {
    const key = callerKey(caller);
    const holder = this.holders === undefined ? undefined : provenHolderKey(caller, passphrase);
    if (holder !== undefined && this.holders?.has(holder)) {
      return { guess: new HolderGuess(this, key, holder), record: await lookup(passphrase) };
    }
    const taking = this.take(key, holder);
    const looking = lookup(passphrase);
    let guess: TakenGuess;
    try {
      guess = await taking;
    } catch (e) {
      looking.catch(() => {});
      throw e;
    }
    try {
      return { guess, record: await looking };
    } catch (e) {
      // The lookup failed: the guess stays taken in the store, as a miss's would.
      await guess.keep();
      throw e;
    }
  }

  /** Takes one guess of the caller; throws `Failure("rate_limited")` when none is left. */
  async take(key: string, holder: string | undefined): Promise<TakenGuess> {
    const slot = this.takeSlot();
    const got = await this.store.takeGuess(key, slot, this.limit.attempts, this.limit.windowSeconds);
    if (!got.granted) throw this.refusal(key, got.retryAfterSeconds);
    this.inFlight.set(key, (this.inFlight.get(key) ?? 0) + 1);
    return new TakenGuess(this, key, slot, holder);
  }

  /** A proven holder's passphrase was refused (rotated, deleted, or not enough for the call): it counts now. */
  async countMiss(key: string, holder: string): Promise<void> {
    this.holders?.forget(holder);
    const got = await this.store.takeGuess(key, this.takeSlot(), this.limit.attempts, this.limit.windowSeconds);
    if (!got.granted) throw this.refusal(key, got.retryAfterSeconds);
  }

  /** Called once per taken guess, when its call is judged (or failed). */
  settle(key: string, slot: string, holder: string | undefined, right: boolean): Promise<void> {
    const n = (this.inFlight.get(key) ?? 1) - 1;
    if (n > 0) this.inFlight.set(key, n);
    else this.inFlight.delete(key);
    if (!right) return DONE;
    if (holder !== undefined) this.holders?.remember(holder);
    return this.store.returnGuess(key, slot).catch(() => {});
  }

  private takeSlot(): string {
    return `${this.instance}.${(this.taken++).toString(36)}`;
  }

  /**
   * The refusal. While calls of the caller are in flight on this instance, they
   * hold (some of) the guesses, and a right one gives its guess back within a
   * round trip: the caller is told to come back in a second, not when the
   * oldest guess leaves the window.
   */
  private refusal(key: string, retryAfterSeconds: number): Failure {
    const held = (this.inFlight.get(key) ?? 0) > 0;
    return new Failure("rate_limited", {
      detail: "too many wrong passphrases; retry later",
      retryAfterSeconds: held ? Math.min(retryAfterSeconds, IN_FLIGHT_RETRY_SECONDS) : retryAfterSeconds,
    });
  }
}

class TakenGuess implements Guess {
  private settled = false;

  constructor(
    private readonly guard: MissLimitGuard,
    private readonly key: string,
    private readonly slot: string,
    private readonly holder: string | undefined,
  ) {}

  giveBack(): Promise<void> {
    return this.settle(true);
  }

  keep(): Promise<void> {
    return this.settle(false);
  }

  private settle(right: boolean): Promise<void> {
    if (this.settled) return DONE;
    this.settled = true;
    return this.guard.settle(this.key, this.slot, this.holder, right);
  }
}

/** A proven holder's call: it took no guess. */
class HolderGuess implements Guess {
  constructor(
    private readonly guard: MissLimitGuard,
    private readonly key: string,
    private readonly holder: string,
  ) {}

  giveBack(): Promise<void> {
    // Proven once more: the caller stays a holder for another while.
    this.guard.holders?.remember(this.holder);
    return DONE;
  }

  keep(): Promise<void> {
    return this.guard.countMiss(this.key, this.holder);
  }
}

/**
 * The callers that proved they hold a passphrase, each until its time is up.
 * Keys are the caller and the passphrase's sha256, never the passphrase.
 */
export class ProvenHolders {
  private readonly until: LRUCache<string, number>;

  constructor(
    private readonly ttlMs: number,
    max: number,
    private readonly now: () => number,
  ) {
    this.until = new LRUCache({ max });
  }

  has(key: string): boolean {
    const until = this.until.get(key);
    if (until === undefined) return false;
    if (this.now() < until) return true;
    this.until.delete(key);
    return false;
  }

  remember(key: string): void {
    this.until.set(key, this.now() + this.ttlMs);
  }

  forget(key: string): void {
    this.until.delete(key);
  }

  /** The keys held, for tests that check their shape. */
  keys(): string[] {
    return [...this.until.keys()];
  }
}

/** JSON keeps the two parts apart whatever characters they hold. */
function callerKey(caller: Caller): string {
  return JSON.stringify([caller.project, caller.subject]);
}

/** The caller and the passphrase's sha256 (hex): the passphrase itself is never kept. */
export function provenHolderKey(caller: Caller, passphrase: string): string {
  return JSON.stringify([caller.project, caller.subject, createHash("sha256").update(passphrase).digest("hex")]);
}
