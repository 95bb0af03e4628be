/**
 * The one pipeline every call goes through, whatever the protocol:
 * authenticate → read the request → validate it against the proto rules →
 * the domain call (which authorizes and acts). Metrics and the logging of
 * unexpected errors happen here too (an outage of Redis or the backend is
 * logged once by its adapter, not once per failed call), and, with tracing
 * on, the call's span (the domain call runs inside it, so its Redis commands
 * and Netless exchanges are its children), so the JSON gateway and the RPC
 * router only translate bytes in and out.
 */
import { create, type DescMessage, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { createValidator, type Validator } from "@bufbuild/protovalidate";
import type { Logger } from "../../log.js";
import { Failure } from "../../services/failure.js";
import type { Authenticator, Caller } from "../../services/ports.js";
import type { CallSpan, CallTracer, TraceCarrier } from "../../tracing/hooks.js";
import { type Cancellation, DEADLINE_PASSED } from "./cancellation.js";
import { callStart, failed, SUCCEEDED, unrunOutcome } from "./tracing.js";
import { documentedCodeOf, isUnexpected, type PublicError, publicError } from "./error-table.js";
import type { Metrics } from "../ops/metrics.js";
import { type CallMetadata, isStream, type Served, type ServedMethod, type ServedStream } from "./served-methods.js";

/** One call as its transport hands it over; its metadata goes on to the domain call. */
export interface CallContext extends CallMetadata {
  readonly protocol: "json" | "connect" | "grpc" | "grpc-web";
  readonly authorization: string | undefined;
  readonly requestId: string;
  /** The client went away or the deadline passed. */
  readonly cancellation: Cancellation;
  /** The caller, when the transport already authenticated it (`CallPipeline.authenticate`). */
  readonly caller?: Caller;
  /** The request's headers: tracing honours an incoming `traceparent` from them. */
  readonly traceCarrier?: TraceCarrier | undefined;
  /** A JSON route's method and path template (for the trace). */
  readonly route?: { readonly httpMethod: string; readonly template: string };
  /** When the transport began the call (`performance.now()`), if before `run` (the RPC router authenticates first). */
  readonly startedAt?: number | undefined;
}

/** A call the RPC router answered itself, after `authenticate` and before `run`. */
export type UnrunCall = Pick<CallContext, "protocol" | "requestId" | "traceCarrier"> & { readonly startedAt: number };

/** What a failed call's caller was told, and whether the call had been cancelled (client gone, deadline passed). */
interface Reported {
  readonly p: PublicError;
  readonly cancelled: boolean;
}

export class CallPipeline {
  private readonly validator: Validator = createValidator();

  constructor(
    private readonly auth: Authenticator,
    private readonly logger: Logger,
    private readonly metrics: Metrics,
    /** Tracing; undefined when it is off (then no span is made and nothing else is done). */
    private readonly tracer?: CallTracer,
  ) {}

  /**
   * Runs one call. `readRequest` is called after authentication, so an
   * unauthenticated caller learns nothing about the body; it throws
   * `Failure("invalid")` for a body that cannot be read. Throws a `Failure`
   * (or an unexpected error, already logged) on failure.
   */
  run<I extends DescMessage, O extends DescMessage>(
    op: ServedMethod<I, O>,
    ctx: CallContext,
    readRequest: () => MessageShape<I>,
  ): Promise<MessageShape<O>> {
    const span = this.tracer?.startCall(callStart(op, ctx));
    if (span === undefined) return this.runCall(op, ctx, readRequest, undefined);
    return span.within(() => this.runCall(op, ctx, readRequest, span));
  }

  private async runCall<I extends DescMessage, O extends DescMessage>(
    op: ServedMethod<I, O>,
    ctx: CallContext,
    readRequest: () => MessageShape<I>,
    span: CallSpan | undefined,
  ): Promise<MessageShape<O>> {
    const started = performance.now();
    let outcome = 0;
    try {
      const caller = ctx.caller ?? (await this.auth.authenticate(ctx.authorization));
      const request = readRequest();
      this.validate(op.method.input, request);
      const response = await op.invoke(caller, request, ctx.cancellation, ctx);
      const output = create(op.method.output, response);
      span?.end(SUCCEEDED);
      return output;
    } catch (thrown) {
      const e = this.asFailure(ctx, thrown);
      const r = this.report(op, ctx, e);
      outcome = r.p.code;
      span?.end(failed(ctx.protocol, r.p, "unary", r.cancelled));
      throw e;
    } finally {
      this.metrics.observeCall(op.method.name, ctx.protocol, outcome === 0 ? "ok" : String(outcome), started);
    }
  }

  /**
   * Runs a server-streaming call: the same steps as `run`, then the domain's
   * messages as they come. The first message is awaited here — or, for a
   * stream the domain establishes first (a promise of messages), that
   * promise — so a failure before it (authentication, validation,
   * NOT_FOUND…) rejects as a unary call would, before a transport has started
   * its answer. The call is counted once, when the stream ends.
   */
  runStream<I extends DescMessage, O extends DescMessage>(
    op: ServedStream<I, O>,
    ctx: CallContext,
    readRequest: () => MessageShape<I>,
  ): Promise<AsyncIterable<MessageShape<O>>> {
    const span = this.tracer?.startCall(callStart(op, ctx));
    if (span === undefined) return this.runStreamCall(op, ctx, readRequest, undefined);
    return span.within(() => this.runStreamCall(op, ctx, readRequest, span));
  }

  private async runStreamCall<I extends DescMessage, O extends DescMessage>(
    op: ServedStream<I, O>,
    ctx: CallContext,
    readRequest: () => MessageShape<I>,
    span: CallSpan | undefined,
  ): Promise<AsyncIterable<MessageShape<O>>> {
    const started = performance.now();
    try {
      const caller = ctx.caller ?? (await this.auth.authenticate(ctx.authorization));
      const request = readRequest();
      this.validate(op.method.input, request);
      const invoked = op.invoke(caller, request, ctx.cancellation);
      if (invoked instanceof Promise) {
        const messages = (await invoked)[Symbol.asyncIterator]();
        return this.streamRest(op, ctx, messages, undefined, { started, span });
      }
      const messages = invoked[Symbol.asyncIterator]();
      const first = await messages.next();
      return this.streamRest(op, ctx, messages, first, { started, span });
    } catch (thrown) {
      const e = this.asFailure(ctx, thrown);
      const r = this.report(op, ctx, e);
      this.metrics.observeCall(op.method.name, ctx.protocol, String(r.p.code), started);
      span?.end(failed(ctx.protocol, r.p, "stream-start", r.cancelled));
      throw e;
    }
  }

  private async *streamRest<O extends DescMessage>(
    op: ServedStream<DescMessage, O>,
    ctx: CallContext,
    messages: AsyncIterator<MessageInitShape<O>>,
    first: IteratorResult<MessageInitShape<O>> | undefined,
    call: { readonly started: number; readonly span: CallSpan | undefined },
  ): AsyncIterable<MessageShape<O>> {
    let reported: Reported | undefined;
    let done = first?.done === true;
    try {
      for (let r = first ?? (await messages.next()); r.done !== true; r = await messages.next()) {
        yield create(op.method.output, r.value);
      }
      done = true;
    } catch (thrown) {
      const e = this.asFailure(ctx, thrown);
      reported = this.report(op, ctx, e);
      throw e;
    } finally {
      if (!done) await messages.return?.(); // the transport stopped reading: let the domain clean up
      const code = reported === undefined ? "ok" : String(reported.p.code);
      this.metrics.observeCall(op.method.name, ctx.protocol, code, call.started);
      call.span?.end(
        reported === undefined ? SUCCEEDED : failed(ctx.protocol, reported.p, "stream-end", reported.cancelled),
      );
    }
  }

  /** What the domain threw because the call's deadline cancelled it is the deadline's failure, not ours. */
  private asFailure(ctx: CallContext, thrown: unknown): unknown {
    return ctx.cancellation.deadlinePassed && !(thrown instanceof Failure) ? deadlinePassed(thrown) : thrown;
  }

  /**
   * Only the first step of `run`, for transports that must authenticate
   * before they read the body (the RPC router decodes the request message
   * itself, so it authenticates here first and hands the caller to `run`
   * through `CallContext.caller`). A failure is logged and counted as `run`
   * would; success is counted by the `run` that follows.
   */
  async authenticate(op: Served, ctx: CallContext): Promise<Caller> {
    const started = performance.now();
    try {
      return await this.auth.authenticate(ctx.authorization);
    } catch (e) {
      const r = this.report(op, ctx, e);
      this.metrics.observeCall(op.method.name, ctx.protocol, String(r.p.code), started);
      const at = isStream(op) ? "stream-start" : "unary";
      this.tracer?.startCall(callStart(op, ctx)).end(failed(ctx.protocol, r.p, at, r.cancelled));
      throw e;
    }
  }

  /**
   * Counts a call that passed `authenticate` but never reached `run`: the RPC
   * router answered it itself (a body that could not be read, decompressed or
   * decoded, or a client gone mid-body). `status` is the gRPC status it got.
   */
  countUnrun(op: Served, ctx: UnrunCall, status: number): void {
    const code = status === 0 ? "ok" : String(documentedCodeOf(status));
    this.metrics.observeCall(op.method.name, ctx.protocol, code, ctx.startedAt);
    this.tracer?.startCall(callStart(op, ctx)).end(unrunOutcome(ctx.protocol, status, code, !isStream(op)));
  }

  /** Logs a failure as it deserves; returns what the caller is told. */
  private report(op: Served, ctx: CallContext, e: unknown): Reported {
    const p = publicError(e);
    const cancelled = ctx.cancellation.aborted && (!(e instanceof Failure) || ctx.cancellation.deadlinePassed);
    if (cancelled) {
      // The client went away or its deadline passed, and the work was cancelled: not a server error.
      this.logger.debug({ requestId: ctx.requestId, rpc: op.method.name, protocol: ctx.protocol }, "call cancelled");
    } else if (isUnexpected(e)) {
      this.logger.error(
        { err: e, requestId: ctx.requestId, rpc: op.method.name, protocol: ctx.protocol },
        "request failed unexpectedly",
      );
    } else if (p.kind === "unavailable" || p.kind === "deadline_exceeded") {
      // The adapter that failed logs the outage once (and its end); each call is counted in metrics.
      this.logger.debug({ requestId: ctx.requestId, rpc: op.method.name, reason: p.message }, `call failed: ${p.kind}`);
    }
    return { p, cancelled };
  }

  private validate(schema: DescMessage, message: MessageShape<DescMessage>): void {
    const result = this.validator.validate(schema, message);
    if (result.kind === "valid") return;
    if (result.kind === "error") throw new Failure("internal", { cause: result.error });
    const first = result.violations[0];
    const detail = first === undefined ? undefined : describeViolation(first.field, first.message);
    throw new Failure("invalid", detail === undefined ? {} : { detail });
  }
}

/** `uid: value length must be at least 1 characters`, with the proto field name. */
function describeViolation(path: ReadonlyArray<{ kind: string; name?: string; localName?: string }>, message: string) {
  const names = path.map((p) => ("name" in p && typeof p.name === "string" ? p.name : "")).filter((n) => n !== "");
  return names.length > 0 ? `${names.join(".")}: ${message}` : message;
}

/** What the domain threw because the call's deadline cancelled it is the deadline's failure, not ours. */
function deadlinePassed(cause: unknown): Failure {
  return new Failure("deadline_exceeded", { detail: DEADLINE_PASSED, cause });
}
