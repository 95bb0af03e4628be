/**
 * The cancellation of one call (the client went away, or its deadline
 * passed), with the `AbortSignal` made only when something asks for it.
 *
 * Why not simply an `AbortController` per request: on Node 20 an `AbortSignal`
 * never dies young. Every one survives the young-generation GC and is promoted
 * to the old generation (measured: about 660 promoted bytes per request, 3 MB/s
 * at 5 000 requests/s), and that promotion is what drove the mark-compact
 * pauses in the mute p99 (bench/RESULTS.md). Mute never looks at the signal;
 * ConvertFile hands it to the Netless client, and only then is one made.
 */
import { Code, ConnectError } from "@connectrpc/connect";
/** The message of a call whose own deadline passed (DEADLINE_EXCEEDED on every protocol). */
export const DEADLINE_PASSED = "the call's deadline passed";

export interface Cancellation {
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

  /** Cancels the call (once; later calls do nothing). */
  abort(why: "client-gone" | "deadline" = "client-gone"): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.why = why;
    this.controller?.abort();
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
  };
}
