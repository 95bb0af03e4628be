import { createHook } from "node:async_hooks";
import { Failure, type FailureKind } from "../../src/services/failure.js";

/** The Failure a promise rejects with (fails the test when it resolves or throws something else). */
export async function failureOf(promise: Promise<unknown>): Promise<Failure> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof Failure) return error;
    throw new Error(`expected a Failure, got ${String(error)}`, { cause: error });
  }
  throw new Error("expected a Failure, but the call succeeded");
}

export async function failureKindOf(promise: Promise<unknown>): Promise<FailureKind> {
  return (await failureOf(promise)).kind;
}

/** Re-exported for the suites of this folder that import it from here. */
export { eventually } from "../harness/eventually.js";

/**
 * Records the timers and TCP handles created from now until `stop()`, and which
 * of them are still alive (not fired, cleared or closed). More precise than
 * comparing `process.getActiveResourcesInfo()` counts, which the test runner's
 * own timers move up and down. `dispose()` removes the hook.
 */
export function trackTimersAndSockets(): { stop: () => void; alive: () => string[]; dispose: () => void } {
  const live = new Map<number, string>();
  let recording = true;
  const hook = createHook({
    init(id, type) {
      if (recording && (type === "Timeout" || type === "TCPWRAP")) live.set(id, type);
    },
    destroy(id) {
      live.delete(id);
    },
  }).enable();
  return {
    stop: () => {
      recording = false;
    },
    alive: () => [...live.values()],
    dispose: () => {
      hook.disable();
    },
  };
}
