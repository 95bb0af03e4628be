/**
 * The watch streams open at once on one instance, whatever they watch
 * (conversions, mute events): at most `max` (MAX_WATCHES), `rate_limited`
 * beyond. Each watch takes a slot when it opens and gives it back when it
 * ends, however it ends.
 */
import { Failure } from "./failure.js";

export class WatchSlots {
  private taken = 0;

  constructor(readonly max: number) {}

  /** Takes a slot; the function it answers gives it back (once, however often it is called). */
  take(): () => void {
    if (this.taken >= this.max) {
      throw new Failure("rate_limited", {
        detail: "too many watches on this server, retry later",
        retryAfterSeconds: 1,
      });
    }
    this.taken++;
    let released = false;
    return () => {
      if (!released) this.taken--;
      released = true;
    };
  }

  /** Slots taken now. */
  get inUse(): number {
    return this.taken;
  }
}
