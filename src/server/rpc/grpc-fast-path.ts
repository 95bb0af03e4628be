/**
 * The gRPC fast path: our own operations over HTTP/2, driven straight from the
 * raw `http2` stream — no compatibility request/response objects, no
 * connect-es handler. A unary call is one data frame in, headers + one data
 * frame + trailers out; a server-streaming call (a watch) is one data frame
 * in, headers once it is established, a data frame per message, trailers at
 * its end (grpc-answer.ts writes them). The token is checked from the
 * HEADERS before any data frame is read: a bad one is answered with the
 * trailers-only UNAUTHENTICATED and the stream reset (its DATA never read).
 * Skipping the compatibility layer and the adapter's per-call objects is what
 * lets a unary call go faster and an open watch hold less memory than through
 * connect-node's adapter
 * (docs/architecture.md, "gRPC fast path"; the figures: docs/performance.md,
 * "Mute" and "Watch fan-out").
 *
 * It takes only what it fully understands: POST, `application/grpc` or
 * `application/grpc+proto`, no request compression, one uncompressed message.
 * Anything else (gRPC-Web, Connect, compressed calls, health, reflection)
 * returns false and goes to connect-es (src/server/rpc/router.ts), so the
 * protocol stays complete. The call itself runs through the same pipeline
 * and error table as every other protocol.
 */
import type { IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";
import { type DescMessage, fromBinary, type MessageShape, toBinary } from "@bufbuild/protobuf";
import { Failure } from "../../services/failure.js";
import type { NextTaker, PushIterator } from "../../services/push-stream.js";
import type { CallContext, CallPipeline, StreamCall, UnaryCall } from "../call/pipeline.js";
import { grpcTimeoutMs } from "../call/cancellation.js";
import { encodedOnce } from "../call/encoded-once.js";
import { returnQuietly } from "../call/reported-stream.js";
import { GrpcAnswer } from "./grpc-answer.js";
import { compactRequestId, firstHeader, requestIdFrom } from "../http/request-answer.js";
import { resetUnread } from "../http/unread-body.js";
import {
  IDEMPOTENCY_KEY_HEADER,
  isStream,
  rpcPath,
  type Served,
  type ServedMethod,
  type ServedStream,
} from "../call/served-methods.js";

const GRPC_CONTENT_TYPES = new Set(["application/grpc", "application/grpc+proto"]);

export interface GrpcFastPathOptions {
  readonly methods: readonly ServedMethod[];
  readonly streams?: readonly ServedStream[];
  readonly pipeline: CallPipeline;
  readonly maxBodyBytes: number;
}

export class GrpcFastPath {
  private readonly byPath = new Map<string, Served>();
  /** Each stream's messages framed once, however many watchers get the same one. */
  private readonly framed = new Map<ServedStream, (message: object) => Buffer>();

  constructor(private readonly o: GrpcFastPathOptions) {
    for (const served of [...o.methods, ...(o.streams ?? [])]) this.byPath.set(rpcPath(served.method), served);
    for (const op of o.streams ?? []) {
      this.framed.set(
        op,
        encodedOnce((message) => frame(toBinary(op.method.output, message as MessageShape<DescMessage>))),
      );
    }
  }

  /** Handles the stream and returns true, or returns false and leaves it untouched. */
  handle(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): boolean {
    if (headers[":method"] !== "POST") return false;
    const op = this.byPath.get(headers[":path"] ?? "");
    if (op === undefined) return false;
    if (!GRPC_CONTENT_TYPES.has(headers["content-type"] ?? "")) return false;
    const encoding = headers["grpc-encoding"];
    if (encoding !== undefined && encoding !== "identity") return false;

    const requestId = requestIdFrom(headers["x-request-id"]);
    if (isStream(op)) compactRequestId(requestId);
    const answer = new GrpcAnswer(stream, requestId);
    const timeoutMs = grpcTimeoutMs(firstHeader(headers["grpc-timeout"]));
    if (timeoutMs === null) {
      answer.fail(new Failure("invalid", { detail: "grpc-timeout is malformed" }));
      stream.resume();
      return true;
    }
    if (timeoutMs !== undefined) answer.deadline(timeoutMs);

    // Everything the call needs from the headers, taken now: a watch lives long, and keeps nothing else of them
    // (a unary call ends at once: it reads the trace headers from the headers themselves).
    const ctx: CallContext = {
      protocol: "grpc",
      authorization: firstHeader(headers.authorization),
      requestId,
      cancellation: answer.cancellation,
      traceCarrier: isStream(op) ? traceHeaders(headers) : headers,
      idempotencyKey: firstHeader(headers[IDEMPOTENCY_KEY_HEADER]),
    };
    const call = this.o.pipeline.begin(op, ctx);
    // Authenticated from the HEADERS alone: no DATA is read for a caller without a valid token.
    call.authenticate().then(
      () =>
        this.readBody(stream, answer, (body) => {
          if (isStream(op)) this.serveStream(op, call as StreamCall, body, answer);
          else this.serveUnary(op, call as UnaryCall, body, answer);
        }),
      (e: unknown) => {
        answer.fail(e);
        resetUnread(stream);
      },
    );
    return true;
  }

  /** The request's bytes, up to the size limit (past it the call fails), once the client ended its side. */
  private readBody(stream: ServerHttp2Stream, answer: GrpcAnswer, then: (body: Buffer) => void): void {
    let chunks: Buffer[] = [];
    let size = 0;
    const limit = this.o.maxBodyBytes + 5;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        if (!answer.done) answer.fail(new Failure("invalid", { detail: "the request message is over the size limit" }));
        return;
      }
      chunks.push(chunk);
    };
    // "end" fires once; `on` and an `off` of its own spare the once-wrapper. Both listeners go, so a
    // watch's stream does not keep `then` (and through it the call's context) for as long as it is open.
    const onEnd = () => {
      stream.off("data", onData);
      stream.off("end", onEnd);
      if (answer.done) return;
      const body = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
      chunks = [];
      then(body);
    };
    stream.on("data", onData);
    stream.on("end", onEnd);
  }

  private serveUnary(op: ServedMethod, call: UnaryCall, body: Buffer, answer: GrpcAnswer): void {
    call
      .run(() => decode(op.method.input, body))
      .then(
        (output) => answer.succeed(frame(toBinary(op.method.output, output))),
        (e: unknown) => answer.fail(e),
      );
  }

  /** A watch: its messages as they come, each waiting for room in the stream; the stream's close ends it. */
  private serveStream(op: ServedStream, call: StreamCall, body: Buffer, answer: GrpcAnswer): void {
    const framed = this.framed.get(op) as (message: object) => Buffer;
    // Copied: the body is a slice of the connection's read buffer, which a stream waiting for its turn to
    // open (openings.ts) would keep whole. Dropped once read: the stream may stay open for hours.
    let request: Buffer | undefined = Buffer.from(body);
    call
      .runStream(() => {
        const bytes = request as Buffer;
        request = undefined;
        return decode(op.method.input, bytes);
      })
      .then(
        (messages) => {
          answer.open();
          new StreamSender(messages, answer, framed).next();
        },
        (e: unknown) => answer.fail(e),
      );
  }
}

/**
 * Sends the stream's messages as they come, each once the stream has room, then its end; as
 * `for await` would, but as one object the stream hands each message to: a watch waits here for
 * hours, and a suspended async function, or a promise per layer, would stay with each watch as
 * long. The answer ended (deadline, client gone): the messages are returned, so the domain cleans up.
 */
class StreamSender implements NextTaker<object> {
  constructor(
    private readonly messages: PushIterator<object>,
    private readonly answer: GrpcAnswer,
    private readonly framed: (message: object) => Buffer,
  ) {}

  next(): void {
    this.messages.nextTo(this);
  }

  took(r: IteratorResult<object>): void {
    const { answer } = this;
    if (r.done === true) {
      answer.close();
      return;
    }
    if (answer.done) {
      this.stop();
      return;
    }
    let room: Promise<void> | undefined;
    try {
      room = answer.send(this.framed(r.value));
    } catch (e) {
      this.stop();
      answer.fail(e);
      return;
    }
    if (room === undefined) this.next();
    else void room.then(() => this.next());
  }

  failed(e: unknown): void {
    this.answer.fail(e);
  }

  private stop(): void {
    void returnQuietly(this.messages);
  }
}

const NO_TRACE_HEADERS: IncomingHttpHeaders = Object.freeze({});

/** The W3C trace context headers, the only ones the tracer reads (src/tracing/otel-sdk.ts), without the rest. */
function traceHeaders(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const { traceparent, tracestate } = headers;
  if (traceparent === undefined && tracestate === undefined) return NO_TRACE_HEADERS;
  return {
    ...(traceparent === undefined ? {} : { traceparent }),
    ...(tracestate === undefined ? {} : { tracestate }),
  };
}

function decode<I extends DescMessage>(input: I, body: Buffer): MessageShape<I> {
  const bytes = unframe(body);
  try {
    return fromBinary(input, bytes);
  } catch (e) {
    throw new Failure("invalid", { detail: "the request message is not valid protobuf", cause: e });
  }
}

/** One message in a gRPC frame: flag 0 (not compressed), 4-byte length, the bytes. */
export function unframe(body: Buffer): Uint8Array {
  if (body.length < 5 || body[0] !== 0 || body.readUInt32BE(1) !== body.length - 5) {
    throw new Failure("invalid", { detail: "the request is not exactly one uncompressed gRPC message" });
  }
  return body.subarray(5);
}

/** A message in a gRPC frame, as `unframe` reads it. */
export function frame(message: Uint8Array): Buffer {
  const framed = Buffer.allocUnsafe(5 + message.length);
  framed[0] = 0;
  framed.writeUInt32BE(message.length, 1);
  framed.set(message, 5);
  return framed;
}
