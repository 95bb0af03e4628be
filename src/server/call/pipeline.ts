/**
 * The one pipeline every call goes through, whatever the protocol:
 * authenticate → read the request → validate it against the proto rules →
 * the domain call (which authorizes and acts). Metrics and the logging of
 * unexpected errors happen here too (an outage of Redis or the backend is
 * logged once by its adapter, not once per failed call), and, with tracing
 * on, the call's span (the domain call runs inside it, so its Redis commands
 * and Netless exchanges are its children), so the JSON gateway and the RPC
 * router only translate bytes in and out.
 *
 * A transport enters the pipeline once per call, by `begin`, and keeps the
 * call it gets. Every transport `authenticate`s it from the request's headers
 * before reading the body (a caller without a valid token costs no body read),
 * then `run`s it, or `abandon`s it when the transport answered it without
 * running it (a body that could not be read). Whatever the path, the call is
 * counted exactly once.
 */
import { create, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import type { Logger } from "../../log.js";
import type { Authenticator, Caller } from "../../services/ports.js";
import type { CallSpan, CallTracer } from "../../tracing/hooks.js";
import { type CallContext, CallSteps } from "./call-steps.js";
import type { Openings } from "./openings.js";
import { endOf, ReportedStream } from "./reported-stream.js";
import { callStart, failed, SUCCEEDED, unrunOutcome } from "./tracing.js";
import { documentedCodeOf } from "./error-table.js";
import type { Metrics } from "../ops/metrics.js";
import { isStream, type Served, type ServedMethod, type ServedStream } from "./served-methods.js";

export type { CallContext } from "./call-steps.js";

export class CallPipeline {
  private readonly steps: CallSteps;

  /** `openings`: the turns server streams take to open (openings.ts; a test may make its own). */
  constructor(auth: Authenticator, logger: Logger, metrics: Metrics, tracer?: CallTracer, openings?: Openings) {
    this.steps = new CallSteps(auth, logger, metrics, tracer, openings);
  }

  /** The one entry of a call into the pipeline; nothing is counted until the call authenticates or runs. */
  begin<I extends DescMessage, O extends DescMessage>(op: ServedMethod<I, O>, ctx: CallContext): UnaryCall<I, O>;
  begin<I extends DescMessage, O extends DescMessage>(op: ServedStream<I, O>, ctx: CallContext): StreamCall<I, O>;
  begin(op: Served, ctx: CallContext): UnaryCall | StreamCall;
  begin(op: Served, ctx: CallContext): UnaryCall | StreamCall {
    return isStream(op) ? new StreamCall(this.steps, op, ctx) : new UnaryCall(this.steps, op, ctx);
  }
}

/**
 * begun → authenticated (from the headers, before the body is read) → ran; or ended: refused by
 * `authenticate`, or `abandon`ed. Each way out counts the call once.
 */
type Phase = "begun" | "authenticated" | "ran" | "ended";

/** What the unary and the streaming call share: authenticating ahead of `run`, and abandoning. */
abstract class PipelineCall {
  private phase: Phase = "begun";
  private caller: Caller | undefined;

  constructor(
    protected readonly steps: CallSteps,
    protected readonly op: Served,
    protected readonly ctx: CallContext,
  ) {}

  /** True once the call ran: from then on it counts itself, whatever happens to it. */
  get ran(): boolean {
    return this.phase === "ran";
  }

  /**
   * Only the first step of `run`, from the headers alone, so that a
   * transport reads the body only for an authenticated caller. The caller is
   * kept for `run`. A failure is logged, counted and traced as `run` would
   * and ends the call.
   */
  async authenticate(): Promise<void> {
    const started = performance.now();
    try {
      this.caller = await this.steps.auth.authenticate(this.ctx.authorization);
      this.phase = "authenticated";
    } catch (e) {
      this.phase = "ended";
      const { op, ctx } = this;
      const r = this.steps.report(op, ctx, e);
      this.steps.metrics.observeCall(op.method.name, ctx.protocol, String(r.p.code), started);
      const at = isStream(op) ? "stream-start" : "unary";
      this.steps.tracer?.startCall(callStart(op, ctx)).end(failed(ctx.protocol, r.p, at, r.cancelled));
      throw e;
    }
  }

  /**
   * Counts a call that passed `authenticate` but never ran: its transport
   * answered it itself (a body that could not be read, decompressed or
   * decoded, or a client gone mid-body). `status` is the gRPC status of that
   * answer (for a JSON answer, the status of its error table row).
   * Does nothing for a call that ran, was refused, or was never authenticated.
   */
  abandon(status: number): void {
    if (this.phase !== "authenticated") return;
    this.phase = "ended";
    const { op, ctx } = this;
    const code = status === 0 ? "ok" : String(documentedCodeOf(status));
    this.steps.metrics.observeCall(op.method.name, ctx.protocol, code, ctx.startedAt ?? performance.now());
    this.steps.tracer?.startCall(callStart(op, ctx)).end(unrunOutcome(ctx.protocol, status, code, !isStream(op)));
  }

  /** Marks the call run; the caller `authenticate` found, if it did. */
  protected start(): Caller | undefined {
    if (this.phase === "ran" || this.phase === "ended") throw new Error(`${this.op.method.name}: a call runs once`);
    this.phase = "ran";
    return this.caller;
  }
}

export class UnaryCall<I extends DescMessage = DescMessage, O extends DescMessage = DescMessage> extends PipelineCall {
  declare protected readonly op: ServedMethod<I, O>;

  /**
   * Runs the call. `readRequest` is called after authentication, so an
   * unauthenticated caller learns nothing about the body; it throws
   * `Failure("invalid")` for a body that cannot be read. Throws a `Failure`
   * (or an unexpected error, already logged) on failure.
   */
  run(readRequest: () => MessageShape<I>): Promise<MessageShape<O>> {
    const caller = this.start();
    const span = this.steps.tracer?.startCall(callStart(this.op, this.ctx));
    if (span === undefined) return this.runCall(caller, readRequest, undefined);
    return span.within(() => this.runCall(caller, readRequest, span));
  }

  private async runCall(
    known: Caller | undefined,
    readRequest: () => MessageShape<I>,
    span: CallSpan | undefined,
  ): Promise<MessageShape<O>> {
    const { op, ctx, steps } = this;
    const started = performance.now();
    let outcome = 0;
    try {
      const caller = known ?? (await steps.auth.authenticate(ctx.authorization));
      const request = readRequest();
      steps.validate(op.method.input, request);
      const response = await op.invoke(caller, request, ctx.cancellation, ctx);
      const output = create(op.method.output, response);
      span?.end(SUCCEEDED);
      return output;
    } catch (thrown) {
      const e = steps.asFailure(ctx, thrown);
      const r = steps.report(op, ctx, e);
      outcome = r.p.code;
      span?.end(failed(ctx.protocol, r.p, "unary", r.cancelled));
      throw e;
    } finally {
      steps.metrics.observeCall(op.method.name, ctx.protocol, outcome === 0 ? "ok" : String(outcome), started);
    }
  }
}

export class StreamCall<I extends DescMessage = DescMessage, O extends DescMessage = DescMessage> extends PipelineCall {
  declare protected readonly op: ServedStream<I, O>;

  /**
   * Runs a server-streaming call: the same steps as `UnaryCall.run`, then the
   * domain's messages as they come. The first message is awaited here — or,
   * for a stream the domain establishes first (a promise of messages), that
   * promise — so a failure before it (authentication, validation,
   * NOT_FOUND…) rejects as a unary call would, before a transport has started
   * its answer. The call is counted once, when the stream ends.
   *
   * Streams open in turns, a few dozen at a time (openings.ts); the call's
   * time, and its span, include the wait for its turn.
   */
  runStream(readRequest: () => MessageShape<I>): Promise<ReportedStream<O>> {
    const caller = this.start();
    const started = performance.now();
    const span = this.steps.tracer?.startCall(callStart(this.op, this.ctx));
    return this.steps.openings.open(
      () =>
        span === undefined
          ? this.runStreamCall(caller, readRequest, started, undefined)
          : span.within(() => this.runStreamCall(caller, readRequest, started, span)),
      // Refused a place in the queue: reported, counted and traced as any call that failed to start.
      (refusal) => Promise.reject(this.failedStart(refusal, started, span)),
    );
  }

  private async runStreamCall(
    known: Caller | undefined,
    readRequest: () => MessageShape<I>,
    started: number,
    span: CallSpan | undefined,
  ): Promise<ReportedStream<O>> {
    const { op, ctx, steps } = this;
    try {
      const caller = known ?? (await steps.auth.authenticate(ctx.authorization));
      const request = readRequest();
      steps.validate(op.method.input, request);
      const invoked = op.invoke(caller, request, ctx.cancellation);
      if (invoked instanceof Promise) {
        const messages = (await invoked)[Symbol.asyncIterator]();
        return new ReportedStream(steps, op, endOf(ctx), messages, undefined, started, span);
      }
      const messages = invoked[Symbol.asyncIterator]();
      const first = await messages.next();
      return new ReportedStream(steps, op, endOf(ctx), messages, first, started, span);
    } catch (thrown) {
      throw this.failedStart(thrown, started, span);
    }
  }

  /** A stream that failed before it started: logged, counted and its span ended; answers what to throw. */
  private failedStart(thrown: unknown, started: number, span: CallSpan | undefined): unknown {
    const { op, ctx, steps } = this;
    const e = steps.asFailure(ctx, thrown);
    const r = steps.report(op, ctx, e);
    steps.metrics.observeCall(op.method.name, ctx.protocol, String(r.p.code), started);
    span?.end(failed(ctx.protocol, r.p, "stream-start", r.cancelled));
    return e;
  }
}
