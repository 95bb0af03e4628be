/**
 * Deadlines of Redis calls that measure Redis, not this process's own busy
 * event loop (src/loop-aware-deadline.ts says how).
 */
import { LoopAwareDeadline } from "../../loop-aware-deadline.js";

/** A Redis call's deadline passed without its answer (its outcome unknown). */
export class DeadlinePassed extends Error {
  override readonly name = "DeadlinePassed";
}

/**
 * `promise`, or a rejection with `message` once `ms` passed without it (see `LoopAwareDeadline`). One promise
 * per call, settled by whichever comes first, the deadline cancelled as soon as `promise` settles (every
 * Redis call of the store goes through here: a race of two promises and a `finally` cost twice as much).
 */
export function withDeadline<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const deadline = new LoopAwareDeadline(ms, () => reject(new DeadlinePassed(message)));
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
