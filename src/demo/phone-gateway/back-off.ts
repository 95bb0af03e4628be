/**
 * Waiting between tries: a sleep that a stop cuts short, and the doubling,
 * jittered back-off a gateway keeps while boardline is slow or restarting.
 */

/** Sleeps `ms`, or less when `signal` aborts (then resolves, never rejects). */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/** The wait before try `attempt + 1` (0-based): `firstMs` doubling to `maxMs`, jittered so gateways spread out. */
export function backOffMs(attempt: number, firstMs: number, maxMs: number, random: () => number): number {
  const base = Math.min(maxMs, firstMs * 2 ** Math.min(attempt, 30));
  return Math.round(base * (0.8 + random() * 0.4));
}
