/**
 * ioredis's socket time-out (`socketTimeout`, connection.ts: a connection with
 * commands in flight that receives nothing for that long is dropped, so a hung
 * Redis is left) judged like every deadline of the store (deadline.ts): the
 * time the event loop was busy does not count, and it fails only after the
 * loop read what arrived. ioredis fires it from a plain
 * timer, so after a busy loop turn (a storm of watches accepted at once) it
 * dropped a healthy connection whose answers were waiting unread in its
 * socket, and every call on it failed as 503. Its `setSocketTimeout` is
 * replaced here, the same otherwise; if a later ioredis has no such method,
 * nothing is replaced (test/faults/watch-storm.test.ts then fails).
 */
import { Redis } from "ioredis";
import { stalledFor } from "../../loop-aware-deadline.js";

interface SocketTimeoutState {
  stream: { once(event: "data", f: () => void): void; destroy(e: Error): void };
  options: { socketTimeout?: number };
  socketTimeoutTimer: NodeJS.Timeout | undefined;
  commandQueue: { length: number };
  setSocketTimeout(): void;
}

let replaced = false;

export function judgeSocketTimeoutAfterReading(): void {
  const proto = Redis.prototype as unknown as SocketTimeoutState;
  if (replaced || typeof proto.setSocketTimeout !== "function") return;
  replaced = true;
  proto.setSocketTimeout = function (this: SocketTimeoutState) {
    const stream = this.stream;
    const ms = this.options.socketTimeout;
    let immediate: NodeJS.Immediate | undefined;
    // A real timer, so ioredis's own clearTimeout of it (at close) still works.
    const arm = (wait: number) => {
      const due = performance.now() + wait;
      this.socketTimeoutTimer = setTimeout(() => {
        const stalled = stalledFor(due);
        if (stalled > 0) return arm(stalled); // the loop was busy: that time does not count
        immediate = setImmediate(() => {
          this.socketTimeoutTimer = undefined;
          stream.destroy(new Error(`Socket timeout. Expecting data, but didn't receive any in ${ms}ms.`));
        });
      }, wait);
    };
    arm(ms ?? 0);
    stream.once("data", () => {
      clearTimeout(this.socketTimeoutTimer);
      if (immediate !== undefined) clearImmediate(immediate);
      this.socketTimeoutTimer = undefined;
      if (this.commandQueue.length === 0) return;
      this.setSocketTimeout();
    });
  };
}
