/**
 * Faults switched on at runtime: error statuses (with `retry-after` on 429),
 * slowness, garbage bodies and connection resets. A fault applies to the next
 * `times` requests that reach a route (404, 405 and 413 answers take none).
 */
import type http from "node:http";
import { errorAnswer, send } from "./http-io.js";

/** A fault applies to the next `times` requests (every request when absent). */
export type SimulatorFault =
  | { readonly kind: "status"; readonly status: 400 | 401 | 403 | 429 | 500 | 502 | 503; readonly times?: number }
  /** Waits before answering (then answers normally, or as another fault says). */
  | { readonly kind: "slow"; readonly delayMs: number; readonly times?: number }
  /** 201 (POST) or 200 (GET) with a body that is not JSON. */
  | { readonly kind: "garbage"; readonly times?: number }
  /** Resets the connection instead of answering. */
  | { readonly kind: "reset"; readonly times?: number };

interface ActiveFault {
  readonly fault: SimulatorFault;
  remaining: number;
}

/** The faults switched on, and the requests sleeping in a "slow" one. */
export class FaultBoard {
  #active: ActiveFault[] = [];
  readonly #sleepers = new Set<() => void>();

  /** Adds a fault; it replaces an active fault of the same kind. */
  set(fault: SimulatorFault): void {
    const times = fault.times ?? Number.POSITIVE_INFINITY;
    if (!(times > 0)) throw new RangeError("times must be positive");
    this.#active = [...this.#active.filter((active) => active.fault.kind !== fault.kind), { fault, remaining: times }];
  }

  clear(): void {
    this.#active = [];
  }

  /** Takes the faults for one request, counting them down. */
  take(): SimulatorFault[] {
    const taken = this.#active.map((active) => {
      active.remaining -= 1;
      return active.fault;
    });
    this.#active = this.#active.filter((active) => active.remaining > 0);
    return taken;
  }

  /** Sleeps `ms`, or less when the response closes first (client gone) or `wakeAll()` is called. */
  sleep(ms: number, res: http.ServerResponse): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.#sleepers.delete(wake);
        res.off("close", wake);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      this.#sleepers.add(wake);
      res.on("close", wake);
    });
  }

  /** Wakes every request sleeping in a "slow" fault (on close: they find their response destroyed and stop). */
  wakeAll(): void {
    for (const wake of [...this.#sleepers]) wake();
  }
}

/**
 * Plays the faults taken for one request: sleeps for "slow" ones, then resets,
 * answers garbage (with `okStatus`, the status of the route's success) or
 * answers an error status. True when the request is done with (answered, reset,
 * or gone while sleeping); false when it goes on to be answered normally.
 */
export async function playFaults(
  board: FaultBoard,
  faults: readonly SimulatorFault[],
  req: http.IncomingMessage,
  res: http.ServerResponse,
  okStatus: number,
): Promise<boolean> {
  for (const fault of faults) {
    if (fault.kind === "slow") await board.sleep(fault.delayMs, res);
  }
  // The client gave up (or we are closing) while we slept.
  if (res.destroyed || req.socket.destroyed) return true;
  if (faults.some((fault) => fault.kind === "reset")) {
    req.socket.resetAndDestroy();
    return true;
  }
  if (faults.some((fault) => fault.kind === "garbage")) {
    res.writeHead(okStatus, { "content-type": "application/json" });
    res.end("<html>this is not JSON {");
    return true;
  }
  const statusFault = faults.find((fault) => fault.kind === "status");
  if (statusFault === undefined) return false;
  const headers: Record<string, string> = statusFault.status === 429 ? { "retry-after": "1" } : {};
  send(res, errorAnswer(statusFault.status, "simulated fault"), headers);
  return true;
}
