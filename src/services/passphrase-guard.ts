/**
 * Slows down passphrase guessing: a caller (project + subject of its token)
 * gets at most `attempts` wrong passphrases judged in any `windowSeconds`;
 * beyond that it is refused with RESOURCE_EXHAUSTED / 429 until a guess
 * leaves the window. A call that names a passphrase takes a guess before its
 * answer is given, atomically in the store (Redis in production), so a burst
 * sent at once, over one connection or many, to one instance or several, is
 * judged no more often than one sent in turn. A right passphrase gives its
 * guess back, and makes its caller a proven holder of it: for a while, that
 * caller's calls with that passphrase take no guess at all. A guesser cannot
 * become a holder without a right passphrase judged through a guess, so each
 * candidate it tries still costs one.
 *
 * Calls beyond the limit whose guesses are still being judged wait rather than
 * fail: on this instance in a queue (at most `attempts` of a caller's guesses in
 * flight at once), and for those other instances hold, a moment at a time. So
 * a caller using many right passphrases at once is slowed, never refused.
 */
import { randomBytes } from "node:crypto";
import { Failure } from "./failure.js";
import type { Caller, PassphraseRecord, Store } from "./ports.js";
import { PROVEN_HOLDERS_MAX, ProvenHolders, provenHolderKey } from "./proven-holders.js";

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

export type PassphraseLookup = (project: string, passphrase: string) => Promise<PassphraseRecord | undefined>;

export interface PassphraseGuard {
  /**
   * Looks the passphrase up with a guess taken beside the lookup (one round
   * trip of latency), or with none for a proven holder. Throws
   * `Failure("rate_limited")` when a guess is needed and none is left.
   */
  lookUp(caller: Caller, passphrase: string, lookup: PassphraseLookup): Promise<LookedUp>;
  /** From now on, tell `observer` of each wrong passphrase and each call the limit refused (the metrics). */
  observe?(observer: GuardObserver): void;
}

export interface GuardObserver {
  /** A passphrase was refused (its guess kept). */
  onMiss(): void;
  /** A call was refused for want of a guess (RESOURCE_EXHAUSTED / 429). */
  onRefused(): void;
}

export const UNOBSERVED: GuardObserver = { onMiss() {}, onRefused() {} };

export interface GuessLimit {
  readonly attempts: number;
  readonly windowSeconds: number;
  /** How long a caller stays a proven holder of a passphrase after its last right call with it; absent or 0: never one. */
  readonly provenSeconds?: number;
}

export const DONE = Promise.resolve();

/** A call whose guess others still hold tries again after this, doubling (with jitter)… */
const HELD_FIRST_WAIT_MS = 20;
/** …and is refused (retry after a second) when none came free within this. */
const HELD_MAX_WAIT_MS = 2_000;

export class MissLimitGuard implements PassphraseGuard {
  /** Slots are this instance's prefix and a counter: unique across instances without a random draw per call. */
  private readonly instance = randomBytes(9).toString("base64url");
  private taken = 0;
  /** Per caller key: its guesses in flight on this instance, and the calls queued for one. */
  private readonly lines = new Map<string, Line>();
  readonly holders: ProvenHolders | undefined;
  observer: GuardObserver = UNOBSERVED;

  constructor(
    private readonly store: Store,
    private readonly limit: GuessLimit,
    now: () => number = Date.now,
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
  ) {
    const seconds = limit.provenSeconds ?? 0;
    this.holders = seconds > 0 ? new ProvenHolders(seconds * 1000, PROVEN_HOLDERS_MAX, now) : undefined;
  }

  observe(observer: GuardObserver): void {
    this.observer = observer;
  }

  async lookUp(caller: Caller, passphrase: string, lookup: PassphraseLookup): Promise<LookedUp> {
    const key = callerKey(caller);
    const holder = this.holders === undefined ? undefined : provenHolderKey(caller, passphrase);
    if (holder !== undefined && this.holders?.has(holder)) {
      return { guess: new HolderGuess(this, key, holder), record: await lookup(caller.project, passphrase) };
    }
    const taking = this.take(key, holder);
    // In line, the lookup would only wait too: it starts with the guess's request when there is no line.
    const looking = this.lines.get(key)?.waiting.length
      ? taking.then(() => lookup(caller.project, passphrase))
      : lookup(caller.project, passphrase);
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
      // The lookup failed: the guess stays taken in the store, as a miss's would (but no miss is counted).
      await guess.lost();
      throw e;
    }
  }

  /** Takes one guess of the caller; throws `Failure("rate_limited")` when none is left. */
  async take(key: string, holder: string | undefined): Promise<TakenGuess> {
    const line = await this.admit(key);
    try {
      const slot = await this.takeSlot(key);
      return new TakenGuess(this, key, slot, holder);
    } catch (e) {
      this.release(key, line);
      throw e;
    }
  }

  /** A proven holder's passphrase was refused (rotated, deleted, or not enough for the call): it counts now. */
  async countMiss(key: string, holder: string): Promise<void> {
    this.holders?.forget(holder);
    const guess = await this.take(key, undefined);
    await guess.keep();
  }

  /** Called once per taken guess, when its call is judged (or failed). */
  settle(key: string, slot: string, holder: string | undefined, right: boolean): Promise<void> {
    const line = this.lines.get(key);
    const settling = right
      ? this.store.returnGuess(key, slot).catch(() => {})
      : this.store.keepGuess(key, slot).catch(() => {});
    if (right && holder !== undefined) this.holders?.remember(holder);
    // The next queued call goes once the store has this guess's outcome, so it is not told the window is held by it.
    return settling.then(() => {
      if (line !== undefined) this.release(key, line);
    });
  }

  /** Resolves when the caller has fewer than `attempts` guesses in flight here; first come, first served. */
  private admit(key: string): Promise<Line> {
    let line = this.lines.get(key);
    if (line === undefined) {
      line = { inFlight: 0, waiting: [] };
      this.lines.set(key, line);
    }
    if (line.inFlight < this.limit.attempts && line.waiting.length === 0) {
      line.inFlight++;
      return Promise.resolve(line);
    }
    const waiting = line;
    return new Promise((resolve, reject) => {
      // Bounded like a wait on other instances: a line that does not move is answered, never waited out.
      const timer = setTimeout(() => {
        const at = waiting.waiting.indexOf(admitted);
        if (at >= 0) waiting.waiting.splice(at, 1);
        reject(this.refused(heldRefusal()));
      }, HELD_MAX_WAIT_MS);
      const admitted = () => {
        clearTimeout(timer);
        resolve(waiting);
      };
      waiting.waiting.push(admitted);
    });
  }

  private refused(refusal: Failure): Failure {
    this.observer.onRefused();
    return refusal;
  }

  private release(key: string, line: Line): void {
    const next = line.waiting.shift();
    if (next !== undefined) {
      next(); // the place passes on: inFlight stays
      return;
    }
    line.inFlight--;
    if (line.inFlight === 0 && this.lines.get(key) === line) this.lines.delete(key);
  }

  /** A guess from the store; while other instances' calls hold the window, waits for them a moment at a time. */
  private async takeSlot(key: string): Promise<string> {
    const started = Date.now();
    for (let wait = HELD_FIRST_WAIT_MS; ; wait *= 2) {
      const slot = `${this.instance}.${(this.taken++).toString(36)}`;
      const got = await this.store.takeGuess(key, slot, this.limit.attempts, this.limit.windowSeconds);
      if (got.granted) return slot;
      const waited = Date.now() - started;
      if (!got.held) throw this.refused(tooManyGuesses(got.retryAfterSeconds));
      if (waited >= HELD_MAX_WAIT_MS) throw this.refused(heldRefusal());
      await this.sleep(Math.min(wait * (0.5 + Math.random()), HELD_MAX_WAIT_MS - waited));
    }
  }
}

function tooManyGuesses(retryAfterSeconds: number): Failure {
  return new Failure("rate_limited", { detail: "too many wrong passphrases; retry later", retryAfterSeconds });
}

/** Refused after waiting HELD_MAX_WAIT_MS for guesses calls in flight hold: one may be back within a second. */
function heldRefusal(): Failure {
  return tooManyGuesses(1);
}

/** A caller's guesses in flight on this instance, and the calls waiting for one. */
interface Line {
  inFlight: number;
  readonly waiting: Array<() => void>;
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
    if (!this.settled) this.guard.observer.onMiss();
    return this.settle(false);
  }

  /** The call failed before its passphrase was judged: the guess stays taken, as a miss's would. */
  lost(): Promise<void> {
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
    this.guard.observer.onMiss();
    return this.guard.countMiss(this.key, this.holder);
  }
}

/** JSON keeps the two parts apart whatever characters they hold. */
function callerKey(caller: Caller): string {
  return JSON.stringify([caller.project, caller.subject]);
}
