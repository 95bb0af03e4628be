/** Polling for a condition that another process, socket or timer will make true. */
import { sleep } from "./sleep.js";

/** Polls until `check` holds (it may be async), or fails after `timeoutMs` naming `what`. */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 2_000,
  what = "condition",
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}
