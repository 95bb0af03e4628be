/**
 * Deadlines of Redis calls that measure Redis, not this process's own busy
 * event loop. A timer fires in the loop's timers phase, before the poll phase
 * reads the sockets; after turns that kept the loop busy (a storm of thousands
 * of watches accepted at once) a plain timer fails calls whose answers are
 * waiting unread, or that the loop had no time to send and read. So:
 *
 * - a timer that fires later than `STALL_MS` after its time tells that the
 *   loop was busy that long: that time does not count, the deadline moves on
 *   by as much;
 * - a deadline that passed fails only after one more poll phase
 *   (`setImmediate` runs right after it), so an answer already received is
 *   read first.
 *
 * On a loop that keeps up, a deadline is what it says.
 */

/** How late a timer may fire before the lateness counts as a busy loop, not as waiting for Redis. */
export const STALL_MS = 20;

/** The ms a timer due at `due` (performance.now()) fired late because the loop was busy; 0 if not. */
export function stalledFor(due: number): number {
  const late = performance.now() - due;
  return late > STALL_MS ? late : 0;
}

/**
 * One deadline: a timer that re-arms itself by as long as the loop stalled, then
 * expires in the check phase. One object and one timer, no closure per arming:
 * every Redis call makes one (a conversion poll makes about six).
 */
class Deadline {
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;
  private due = 0;

  constructor(
    ms: number,
    private readonly expire: () => void,
  ) {
    this.arm(ms);
  }

  cancel(): void {
    clearTimeout(this.timer);
    if (this.immediate !== undefined) clearImmediate(this.immediate);
  }

  private arm(wait: number): void {
    this.due = performance.now() + wait;
    this.timer = setTimeout(Deadline.fire, wait, this);
  }

  private static fire(this: void, deadline: Deadline): void {
    const stalled = stalledFor(deadline.due);
    if (stalled > 0) deadline.arm(stalled);
    else deadline.immediate = setImmediate(deadline.expire);
  }
}

/** Calls `expire` once `ms` of responsive loop have passed and what arrived was read; the function it answers cancels it. */
export function afterDeadline(ms: number, expire: () => void): () => void {
  const deadline = new Deadline(ms, expire);
  return () => deadline.cancel();
}

/**
 * `promise`, or a rejection with `message` once `ms` passed without it (see `afterDeadline`). One promise
 * settled by whichever comes first, rather than a race of two and a `finally`: half the garbage per call.
 */
export function withDeadline<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const deadline = new Deadline(ms, () => reject(new Error(message)));
    promise.then(
      (value) => {
        deadline.cancel();
        resolve(value);
      },
      (error: unknown) => {
        deadline.cancel();
        reject(error);
      },
    );
  });
}
