/**
 * The answer side of one call on the gRPC fast path (grpc-fast-path.ts),
 * written straight to the raw HTTP/2 stream:
 *
 * - unary: headers, the one message, `grpc-status: 0` trailers (`succeed`);
 * - server streaming: headers as soon as the stream is established (`open`),
 *   one data frame per message (`send`, with the stream's own backpressure),
 *   then the trailers (`close`);
 * - a failure (`fail`): before the headers, a trailers-only answer; after
 *   them, the trailers. Either way the error table's status, message and
 *   ErrorInfo (grpc-status-trailer.ts).
 *
 * Exactly one ending reaches the wire; the call's deadline is one of them.
 * The stream closing (client gone, reset, connection cut) cancels the call.
 */
import type { OutgoingHttpHeaders, ServerHttp2Stream } from "node:http2";
import { Failure } from "../../services/failure.js";
import { CallCancellation, DEADLINE_PASSED } from "../call/cancellation.js";
import { grpcErrorStatus } from "./grpc-status-trailer.js";
import { writableAgain } from "../http/request-answer.js";

/** A stream's errors end it with "close", which is what this answer acts on (one function for every stream). */
function ignoreError(): void {}

const OK: OutgoingHttpHeaders = { "grpc-status": "0" };

/** "wantTrailers" fires once per stream: one function for every OK ending (`this`: the stream), no closure. */
function sendOk(this: ServerHttp2Stream): void {
  this.sendTrailers(OK);
}

/** waiting: nothing sent yet; open: headers sent (a stream); ended: an ending went out (or the stream is gone). */
type State = "waiting" | "open" | "ended";

export class GrpcAnswer {
  readonly cancellation = new CallCancellation();
  private state: State = "waiting";
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly stream: ServerHttp2Stream,
    private readonly requestId: string,
  ) {
    // "close" fires once; `once` would keep a wrapper as long as the stream (a watch: hours).
    stream.on("close", () => {
      this.end();
      this.cancellation.abort();
    });
    stream.on("error", ignoreError);
  }

  /** Whether an ending went out (or the stream is gone): nothing more can be sent. */
  get done(): boolean {
    return this.state === "ended";
  }

  deadline(ms: number): void {
    this.timer = setTimeout(() => {
      this.fail(new Failure("deadline_exceeded", { detail: DEADLINE_PASSED }));
      this.cancellation.abort("deadline");
    }, ms);
  }

  /** A unary call's one message, and its OK status. */
  succeed(frame: Buffer): void {
    if (this.state !== "waiting" || !this.end() || this.stream.closed) return;
    this.respond();
    this.stream.on("wantTrailers", sendOk);
    this.stream.end(frame);
  }

  /** A stream is established: its headers go out now, before any message. */
  open(): void {
    if (this.state !== "waiting" || this.stream.closed) return;
    this.state = "open";
    this.respond();
  }

  /**
   * One message of an open stream. Resolves at once while the stream has room,
   * else once it drained (or closed): a client that does not read holds the
   * messages back in the domain's bounded queue, not in this stream's buffer.
   */
  send(frame: Buffer): Promise<void> | undefined {
    if (this.state !== "open") return undefined;
    return this.stream.write(frame) ? undefined : writableAgain(this.stream);
  }

  /** An open stream's OK end. */
  close(): void {
    if (this.state !== "open" || !this.end()) return;
    this.stream.on("wantTrailers", sendOk);
    this.stream.end();
  }

  /** The call failed: the error table's status, as trailers-only before the headers, as trailers after them. */
  fail(e: unknown): void {
    const wasOpen = this.state === "open";
    if (!this.end() || this.stream.closed) return;
    if (wasOpen) {
      const trailers: OutgoingHttpHeaders = { ...grpcErrorStatus(e) };
      this.stream.on("wantTrailers", () => this.stream.sendTrailers(trailers));
      this.stream.end();
      return;
    }
    this.stream.respond(
      {
        ":status": 200,
        "content-type": "application/grpc+proto",
        "x-request-id": this.requestId,
        ...grpcErrorStatus(e),
      },
      { endStream: true },
    );
  }

  private respond(): void {
    this.stream.respond(
      { ":status": 200, "content-type": "application/grpc+proto", "x-request-id": this.requestId },
      { waitForTrailers: true },
    );
  }

  /** Marks the call ended; false when it already was. */
  private end(): boolean {
    if (this.state === "ended") return false;
    this.state = "ended";
    if (this.timer !== undefined) clearTimeout(this.timer);
    return true;
  }
}
