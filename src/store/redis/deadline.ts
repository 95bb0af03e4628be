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

/** Calls `expire` once `ms` of responsive loop have passed and what arrived was read; the function it answers cancels it. */
export function afterDeadline(ms: number, expire: () => void): () => void {
  let timer: NodeJS.Timeout | undefined;
  let immediate: NodeJS.Immediate | undefined;
  const arm = (wait: number) => {
    const due = performance.now() + wait;
    timer = setTimeout(() => {
      const stalled = stalledFor(due);
      if (stalled > 0) arm(stalled);
      else immediate = setImmediate(expire);
    }, wait);
  };
  arm(ms);
  return () => {
    clearTimeout(timer);
    if (immediate !== undefined) clearImmediate(immediate);
  };
}

/**
 * `promise`, or a rejection with `message` once `ms` passed without it (see `afterDeadline`). One promise
 * per call, settled by whichever comes first, the deadline cancelled as soon as `promise` settles (every
 * Redis call of the store goes through here: a race of two promises and a `finally` cost twice as much).
 */
export function withDeadline<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const cancel = afterDeadline(ms, () => reject(new Error(message)));
    promise.then(
      (value) => {
        cancel();
        resolve(value);
      },
      (error: unknown) => {
        cancel();
        reject(error);
      },
    );
  });
}
