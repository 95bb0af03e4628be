/**
 * A deadline that measures the world, not this process's own busy event loop.
 * A timer fires in the loop's timers phase, before the poll phase reads the
 * sockets; after turns that kept the loop busy (a storm of thousands of
 * watches accepted at once) a plain timer gives up on what already arrived
 * unread, or on what the loop had no time to send. So:
 *
 * - a timer that fires later than `STALL_MS` after its time tells that the
 *   loop was busy that long: that time does not count, the deadline moves on
 *   by as much;
 * - a deadline that passed expires only after one more poll phase
 *   (`setImmediate` runs right after it), so what was already received is
 *   read first.
 *
 * On a loop that keeps up, a deadline is what it says. Redis calls and
 * subscriptions (src/store/redis/deadline.ts, subscriber.ts, socket-timeout.ts)
 * and a new connection's first bytes (src/server/http/connection-sniffer.ts)
 * are judged this way.
 */

/** How late a timer may fire before the lateness counts as a busy loop, not as waiting. */
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
