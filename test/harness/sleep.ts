/** Waits `ms` milliseconds (for pacing load and faults; to wait for a condition, use `eventually`). */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
