/**
 * Faults switched on at runtime: error statuses (with `retry-after` on 429),
 * slowness, garbage bodies, connection resets and the backend's "too many
 * tasks" answer. A fault applies to the next `times` requests that reach a
 * route (404, 405 and 413 answers take none), of one operation when it names one.
 * A "slow" fault alone holds back the answer, not the work (request-handler.ts);
 * with another fault it delays that fault's answer, and nothing is done.
 */
import type http from "node:http";
import { type Answer, errorAnswer, send } from "./http-io.js";

/** What a route does; a fault can be aimed at one of them. */
export type SimulatorOperation = "create" | "query" | "cancel";

interface FaultAim {
  /** The next `times` requests (every request when absent). */
  readonly times?: number;
  /** Only requests of this operation (every route's when absent). */
  readonly operation?: SimulatorOperation;
}

export type SimulatorFault = FaultAim &
  (
    | { readonly kind: "status"; readonly status: 400 | 401 | 403 | 429 | 500 | 502 | 503 }
    /** Answers late: the request is handled when it arrives, its answer sent `delayMs` later (or as another fault says). */
    | { readonly kind: "slow"; readonly delayMs: number }
    /** The route's success status with a body that is not what the API sends (by default not JSON). */
    | { readonly kind: "garbage"; readonly body?: string }
    /** Resets the connection instead of answering. */
    | { readonly kind: "reset" }
    /** 400 with the backend's "the number of tasks exceeds limit" error code, as when over capacity. */
    | { readonly kind: "too-many-tasks" }
  );

/** The projector API's error code for "the number of tasks exceeds limit". */
export const TOO_MANY_TASKS_ERROR_CODE = 2010203;

/** The backend's answer when a project's conversions per second are used up (the fault, and create-limit.ts). */
export function tooManyTasksAnswer(): Answer {
  const message = "the number of tasks exceeds limit";
  return { status: 400, body: { message, errorCode: TOO_MANY_TASKS_ERROR_CODE, errorMessage: message } };
}

interface ActiveFault {
  readonly fault: SimulatorFault;
  remaining: number;
}

/** The faults switched on, and the requests sleeping in a "slow" one. */
export class FaultBoard {
  #active: ActiveFault[] = [];
  readonly #sleepers = new Set<() => void>();

  /** Adds a fault; it replaces an active fault of the same kind aimed at the same operation(s). */
  set(fault: SimulatorFault): void {
    const times = fault.times ?? Number.POSITIVE_INFINITY;
    if (!(times > 0)) throw new RangeError("times must be positive");
    const replaced = (active: ActiveFault) =>
      active.fault.kind === fault.kind && active.fault.operation === fault.operation;
    this.#active = [...this.#active.filter((active) => !replaced(active)), { fault, remaining: times }];
  }

  clear(): void {
    this.#active = [];
  }

  /** Takes the faults for one request of `operation`, counting them down; those aimed at it come first. */
  take(operation: SimulatorOperation): SimulatorFault[] {
    const taken: SimulatorFault[] = [];
    for (const active of this.#active) {
      if (active.fault.operation !== undefined && active.fault.operation !== operation) continue;
      active.remaining -= 1;
      taken.push(active.fault);
    }
    this.#active = this.#active.filter((active) => active.remaining > 0);
    return [...taken.filter((f) => f.operation !== undefined), ...taken.filter((f) => f.operation === undefined)];
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

/** Whether the faults taken for a request answer it in place of its route ("slow" ones only delay). */
export function replacesAnswer(faults: readonly SimulatorFault[]): boolean {
  return faults.some((fault) => fault.kind !== "slow");
}

/**
 * Sleeps through the "slow" faults taken for one request. True when the request
 * is gone meanwhile (the client gave up, or we are closing): nothing to answer.
 */
export async function sleepThroughSlowFaults(
  board: FaultBoard,
  faults: readonly SimulatorFault[],
  req: http.IncomingMessage,
  res: http.ServerResponse,
): Promise<boolean> {
  for (const fault of faults) {
    if (fault.kind === "slow") await board.sleep(fault.delayMs, res);
  }
  return res.destroyed || req.socket.destroyed;
}

/**
 * Answers a request whose faults replace its route's answer (`replacesAnswer`):
 * sleeps for "slow" ones, then resets, answers garbage (with `okStatus`, the
 * status of the route's success), "too many tasks", or an error status.
 */
export async function playFaults(
  board: FaultBoard,
  faults: readonly SimulatorFault[],
  req: http.IncomingMessage,
  res: http.ServerResponse,
  okStatus: number,
): Promise<void> {
  if (await sleepThroughSlowFaults(board, faults, req, res)) return;
  if (faults.some((fault) => fault.kind === "reset")) {
    req.socket.resetAndDestroy();
    return;
  }
  const garbage = faults.find((fault) => fault.kind === "garbage");
  if (garbage !== undefined) {
    res.writeHead(okStatus, { "content-type": "application/json" });
    res.end(garbage.body ?? "<html>this is not JSON {");
    return;
  }
  if (faults.some((fault) => fault.kind === "too-many-tasks")) {
    send(res, tooManyTasksAnswer());
    return;
  }
  const statusFault = faults.find((fault) => fault.kind === "status");
  if (statusFault === undefined) return;
  const headers: Record<string, string> = statusFault.status === 429 ? { "retry-after": "1" } : {};
  send(res, errorAnswer(statusFault.status, "simulated fault"), headers);
}
