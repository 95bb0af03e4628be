/**
 * Deadlines of Redis calls, judged only after the event loop has read what
 * already arrived. A timer fires in the loop's timers phase, before the poll
 * phase reads the sockets: after a turn that kept the loop busy (a storm of
 * thousands of watches accepted at once), a timer would fail a call whose
 * answer is already in the socket, unread. So a deadline that passes waits one
 * more poll phase (`setImmediate` runs right after it) and fails only if the
 * answer still has not come. On an idle loop that costs nothing measurable.
 */

/** Calls `expire` once `ms` have passed and what arrived by then was read; the function it answers cancels it. */
export function afterDeadline(ms: number, expire: () => void): () => void {
  let immediate: NodeJS.Immediate | undefined;
  const timer = setTimeout(() => {
    immediate = setImmediate(expire);
  }, ms);
  return () => {
    clearTimeout(timer);
    if (immediate !== undefined) clearImmediate(immediate);
  };
}

/** `promise`, or a rejection with `message` once `ms` passed without it (see `afterDeadline`). */
export function withDeadline<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let cancel: (() => void) | undefined;
  const deadline = new Promise<never>((_, reject) => {
    cancel = afterDeadline(ms, () => reject(new Error(message)));
  });
  return Promise.race([promise, deadline]).finally(() => cancel?.());
}
