/**
 * The end of one call before its answer: its deadline as the client states it,
 * and its cancellation (the client went away, or that deadline passed).
 *
 * Deadline: `grpc-timeout` (gRPC and gRPC-Web: 1–8 digits and a unit) or
 * `connect-timeout-ms` (Connect: 1–10 digits). A deadline longer than a Node
 * timer can hold (`MAX_TIMER_MS`, about 24.8 days) is no practical deadline:
 * the call runs without one, on every protocol (connect-es's timer would
 * otherwise overflow: Node fires it at once, and warns).
 *
 * Cancellation: the `AbortSignal` is made only when something asks for it.
 * Why not simply an `AbortController` per request: a controller and its signal
 * are an EventTarget, several times dearer to make than a plain object, and
 * the transport would add a listener to each, on the path of every call. Mute
 * never looks at the signal; ConvertFile hands it to the Netless client, and
 * only then is one made.
 */
import type { IncomingHttpHeaders } from "node:http";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Ending, Cancellation as WatchCancellation } from "../../services/push-stream.js";
/** The longest timer Node arms as asked. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

const GRPC_TIMEOUT = /^(\d{1,8})([HMSmun])$/;
const CONNECT_TIMEOUT = /^\d{1,10}$/;
const UNIT_MS: Readonly<Record<string, number>> = { H: 3_600_000, M: 60_000, S: 1_000, m: 1, u: 1e-3, n: 1e-6 };

/** The deadline in ms; `undefined` for none (or one too long to matter); `null` when malformed. */
export function grpcTimeoutMs(value: string | undefined): number | undefined | null {
  if (value === undefined) return undefined;
  const m = GRPC_TIMEOUT.exec(value);
  if (m === null) return null;
  const ms = Number(m[1]) * (UNIT_MS[m[2] as string] as number);
  return ms > MAX_TIMER_MS ? undefined : ms;
}

function connectTimeoutMs(value: string): number | undefined | null {
  if (!CONNECT_TIMEOUT.test(value)) return null;
  const ms = Number(value);
  return ms > MAX_TIMER_MS ? undefined : ms;
}

/**
 * Removes a well-formed deadline header that is too long for a timer, before
 * connect-es reads it: the call then runs with no deadline. Malformed values
 * stay, for connect-es to refuse as the protocol says.
 */
export function dropUnarmableDeadline(headers: IncomingHttpHeaders): void {
  const grpc = headers["grpc-timeout"];
  if (typeof grpc === "string" && GRPC_TIMEOUT.test(grpc) && grpcTimeoutMs(grpc) === undefined) {
    delete headers["grpc-timeout"];
  }
  const connect = headers["connect-timeout-ms"];
  if (typeof connect === "string" && CONNECT_TIMEOUT.test(connect) && connectTimeoutMs(connect) === undefined) {
    delete headers["connect-timeout-ms"];
  }
}

/** The message of a call whose own deadline passed (DEADLINE_EXCEEDED on every protocol). */
export const DEADLINE_PASSED = "the call's deadline passed";

/** A call's cancellation; a watch takes it as it is (`onAbort`), other domain calls its `signal`. */
export interface Cancellation extends WatchCancellation {
  /** Whether the call was cancelled; reading it makes no signal. */
  readonly aborted: boolean;
  /** Cancelled because the call's deadline passed (not because the client went away). */
  readonly deadlinePassed: boolean;
  /** A signal that aborts with the call; made on first use. */
  readonly signal: AbortSignal;
}

export class CallCancellation implements Cancellation {
  private controller: AbortController | undefined;
  private cancelled = false;
  private why: "client-gone" | "deadline" = "client-gone";
  /** What `onAbort` was given: one (a watch) in the field itself, more in an array. */
  private endings: Ending | Ending[] | undefined;

  get aborted(): boolean {
    return this.cancelled;
  }

  get deadlinePassed(): boolean {
    return this.cancelled && this.why === "deadline";
  }

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.cancelled) this.controller.abort();
    }
    return this.controller.signal;
  }

  onAbort(what: Ending): void {
    if (this.cancelled) what.end();
    else if (this.endings === undefined) this.endings = what;
    else if (!Array.isArray(this.endings)) this.endings = [this.endings, what];
    else this.endings.push(what);
  }

  /** Cancels the call (once; later calls do nothing). */
  abort(why: "client-gone" | "deadline" = "client-gone"): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.why = why;
    this.controller?.abort();
    const endings = this.endings;
    this.endings = undefined;
    if (Array.isArray(endings)) for (const what of endings) what.end();
    else endings?.end();
  }
}

/**
 * A signal that already exists (connect-es makes one per call) as a
 * `Cancellation`; connect-es aborts it with a DEADLINE_EXCEEDED ConnectError
 * when the call's deadline passes.
 */
export function cancellationOf(signal: AbortSignal): Cancellation {
  return {
    get aborted() {
      return signal.aborted;
    },
    get deadlinePassed() {
      return signal.aborted && ConnectError.from(signal.reason).code === Code.DeadlineExceeded;
    },
    signal,
    onAbort(what) {
      if (signal.aborted) what.end();
      else signal.addEventListener("abort", () => what.end(), { once: true });
    },
  };
}
