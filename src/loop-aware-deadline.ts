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

/**
 * One deadline: calls `expire` once `ms` of responsive loop have passed and what arrived was read,
 * unless cancelled first. A timer that re-arms itself by as long as the loop stalled, then expires in
 * the check phase: one object and one timer, no closure per arming (every Redis call makes one).
 */
export class LoopAwareDeadline {
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
    this.timer = setTimeout(LoopAwareDeadline.fire, wait, this);
  }

  private static fire(this: void, deadline: LoopAwareDeadline): void {
    const stalled = stalledFor(deadline.due);
    if (stalled > 0) deadline.arm(stalled);
    else deadline.immediate = setImmediate(deadline.expire);
  }
}

/** A `LoopAwareDeadline`, as the function that cancels it. */
export function afterDeadline(ms: number, expire: () => void): () => void {
  const deadline = new LoopAwareDeadline(ms, expire);
  return () => deadline.cancel();
}
