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
 * call it gets: the JSON gateway and the gRPC fast path `run` it at once; the
 * RPC router, which must authenticate before connect-es reads the body,
 * `authenticate`s it first and `abandon`s it when connect-es answered it
 * without running it. Whatever the path, the call is counted exactly once.
 */
import { create, type DescMessage, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import type { Logger } from "../../log.js";
import type { Authenticator, Caller } from "../../services/ports.js";
import type { CallSpan, CallTracer } from "../../tracing/hooks.js";
import { type CallContext, CallSteps, type Reported } from "./call-steps.js";
import { callStart, failed, SUCCEEDED, unrunOutcome } from "./tracing.js";
import { documentedCodeOf } from "./error-table.js";
import type { Metrics } from "../ops/metrics.js";
import { isStream, type Served, type ServedMethod, type ServedStream } from "./served-methods.js";

export type { CallContext } from "./call-steps.js";

export class CallPipeline {
  private readonly steps: CallSteps;

  constructor(auth: Authenticator, logger: Logger, metrics: Metrics, tracer?: CallTracer) {
    this.steps = new CallSteps(auth, logger, metrics, tracer);
  }

  /** The one entry of a call into the pipeline; nothing is counted until the call authenticates or runs. */
  begin<I extends DescMessage, O extends DescMessage>(op: ServedMethod<I, O>, ctx: CallContext): UnaryCall<I, O>;
  begin<I extends DescMessage, O extends DescMessage>(op: ServedStream<I, O>, ctx: CallContext): StreamCall<I, O>;
  begin(op: Served, ctx: CallContext): UnaryCall | StreamCall {
    return isStream(op) ? new StreamCall(this.steps, op, ctx) : new UnaryCall(this.steps, op, ctx);
  }
}

/**
 * begun → authenticated (the RPC router's request gate) → ran; or ended: refused by
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
   * Only the first step of `run`, for transports that must authenticate
   * before they read the body (the RPC router: connect-es decodes the request
   * message itself). The caller is kept for `run`. A failure is logged,
   * counted and traced as `run` would and ends the call.
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
   * Counts a call that passed `authenticate` but never ran: the RPC router
   * answered it itself (a body that could not be read, decompressed or
   * decoded, or a client gone mid-body). `status` is the gRPC status it got.
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
   */
  runStream(readRequest: () => MessageShape<I>): Promise<AsyncIterable<MessageShape<O>>> {
    const caller = this.start();
    const span = this.steps.tracer?.startCall(callStart(this.op, this.ctx));
    if (span === undefined) return this.runStreamCall(caller, readRequest, undefined);
    return span.within(() => this.runStreamCall(caller, readRequest, span));
  }

  private async runStreamCall(
    known: Caller | undefined,
    readRequest: () => MessageShape<I>,
    span: CallSpan | undefined,
  ): Promise<AsyncIterable<MessageShape<O>>> {
    const { op, ctx, steps } = this;
    const started = performance.now();
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
      const e = steps.asFailure(ctx, thrown);
      const r = steps.report(op, ctx, e);
      steps.metrics.observeCall(op.method.name, ctx.protocol, String(r.p.code), started);
      span?.end(failed(ctx.protocol, r.p, "stream-start", r.cancelled));
      throw e;
    }
  }
}

const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined };

/**
 * What a stream's end still needs of its call's context (its cancellation, and what a failure is
 * logged with): not the token, the trace headers or the route, which a watch would keep for hours.
 */
function endOf(ctx: CallContext): CallContext {
  return { protocol: ctx.protocol, requestId: ctx.requestId, cancellation: ctx.cancellation, authorization: undefined };
}

/**
 * The rest of a stream as its transport takes it: each of the domain's
 * messages made a message of the output type, and the call counted (and its
 * span ended) once, when the stream ends — it ran out, it failed (reported as
 * any call's failure), or the transport stopped taking it (`return`, which
 * lets the domain clean up first). A plain iterator rather than an async
 * generator: an open watch waits in here for hours, and a suspended generator
 * holds a frame, its registers and its promises for each. Its transport takes
 * one message at a time, as `for await` does.
 */
class ReportedStream<O extends DescMessage> implements AsyncIterableIterator<MessageShape<O>> {
  private ended = false;

  constructor(
    private readonly steps: CallSteps,
    private readonly op: ServedStream<DescMessage, O>,
    private readonly ctx: CallContext,
    private readonly messages: AsyncIterator<MessageInitShape<O>>,
    private first: IteratorResult<MessageInitShape<O>> | undefined,
    private readonly started: number,
    private readonly span: CallSpan | undefined,
  ) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  next(): Promise<IteratorResult<MessageShape<O>>> {
    if (this.ended) return Promise.resolve(DONE);
    const first = this.first;
    if (first !== undefined) {
      this.first = undefined;
      return new Promise((resolve) => resolve(this.take(first)));
    }
    return this.messages.next().then(
      (r) => this.take(r),
      (e: unknown) => this.fail(e),
    );
  }

  /** The transport stopped taking messages: the domain cleans up, then the call is counted. */
  return(): Promise<IteratorResult<MessageShape<O>>> {
    if (this.ended) return Promise.resolve(DONE);
    this.ended = true;
    return this.closeSource().then(() => {
      this.report(undefined);
      return DONE;
    });
  }

  private take(
    r: IteratorResult<MessageInitShape<O>>,
  ): IteratorResult<MessageShape<O>> | Promise<IteratorResult<MessageShape<O>>> {
    if (this.ended) return DONE; // `return` came while the domain was still finding this one
    if (r.done === true) {
      this.ended = true;
      this.report(undefined);
      return DONE;
    }
    try {
      return { done: false, value: create(this.op.method.output, r.value) };
    } catch (e) {
      return this.fail(e);
    }
  }

  /** The stream failed: reported as a call's failure; the domain cleans up; the transport gets the failure. */
  private fail(thrown: unknown): Promise<IteratorResult<MessageShape<O>>> {
    if (this.ended) return Promise.resolve(DONE); // the transport had stopped taking messages
    this.ended = true;
    const e = this.steps.asFailure(this.ctx, thrown);
    const reported = this.steps.report(this.op, this.ctx, e);
    return this.closeSource().then(() => {
      this.report(reported);
      throw e;
    });
  }

  private closeSource(): Promise<unknown> {
    return Promise.resolve(this.messages.return?.()).catch(() => undefined);
  }

  /** Counts the call and ends its span: `reported` is its failure, or undefined for OK. */
  private report(reported: Reported | undefined): void {
    const { op, ctx, steps, span } = this;
    const code = reported === undefined ? "ok" : String(reported.p.code);
    steps.metrics.observeCall(op.method.name, ctx.protocol, code, this.started);
    span?.end(reported === undefined ? SUCCEEDED : failed(ctx.protocol, reported.p, "stream-end", reported.cancelled));
  }
}
