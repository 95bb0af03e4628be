/**
 * The watch streams open at once on one instance, whatever they watch
 * (conversions, mute events): at most `max` (MAX_WATCHES), `rate_limited`
 * beyond. Each watch takes a slot when it opens and gives it back when it
 * ends, however it ends.
 *
 * A refusal says when to come back (`Retry-After`), jittered over
 * `RETRY_SPREAD_SECONDS` so that a storm of refused clients does not come
 * back all in the same second; each refusal is counted (`refused`, the
 * metric) and told to `onRefused` (the log, at most once a second).
 */
import { Failure } from "./failure.js";

/** A refused watch is told to come back after 1 to this many seconds, at random. */
export const RETRY_SPREAD_SECONDS = 3;

export class WatchSlots {
  private taken = 0;
  private refusals = 0;

  constructor(
    readonly max: number,
    private readonly onRefused: (inUse: number) => void = () => {},
    private readonly random: () => number = Math.random,
  ) {}

  /** Takes a slot; the function it answers gives it back (once, however often it is called). */
  take(): () => void {
    this.takeOne();
    let released = false;
    return () => {
      if (!released) this.giveBack();
      released = true;
    };
  }

  /**
   * Takes a slot that `giveBack` returns, for a holder that gives it back exactly once itself (the
   * mute-event hub: a closure per watch would stay with each watch for hours).
   */
  takeOne(): void {
    if (this.taken >= this.max) {
      this.refusals++;
      this.onRefused(this.taken);
      throw new Failure("rate_limited", {
        detail: "too many watches on this server, retry later",
        retryAfterSeconds: 1 + Math.floor(this.random() * RETRY_SPREAD_SECONDS),
      });
    }
    this.taken++;
  }

  /** Gives back a slot `takeOne` took. */
  giveBack(): void {
    this.taken--;
  }

  /** Slots taken now. */
  get inUse(): number {
    return this.taken;
  }

  /** Watches refused so far. */
  get refused(): number {
    return this.refusals;
  }
}
