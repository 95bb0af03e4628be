/**
 * The rest of a server-streaming call once it is established
 * (`StreamCall.runStream` in pipeline.ts makes it): the domain's messages as
 * its transport takes them, and the call counted once when the stream ends.
 */
import { create, type DescMessage, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { canPush, type NextTaker, type PushIterator } from "../../services/push-stream.js";
import type { CallSpan } from "../../tracing/hooks.js";
import type { CallContext, CallSteps, Reported } from "./call-steps.js";
import { failed, SUCCEEDED } from "./tracing.js";
import type { ServedStream } from "./served-methods.js";
import type { WatchMeter } from "../ops/watch-metrics.js";

const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined };

/**
 * What a stream's end still needs of its call's context (its cancellation, and what a failure is
 * logged with): not the token, the trace headers or the route, which a watch would keep for hours.
 */
export function endOf(ctx: CallContext): CallContext {
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
 * one message at a time, as `for await` does: through promises (`next`), or
 * handed to it (`nextTo`), which is how a fast transport waits on a watch
 * holding nothing but itself.
 */
export class ReportedStream<O extends DescMessage>
  implements AsyncIterableIterator<MessageShape<O>>, PushIterator<MessageShape<O>>, NextTaker<MessageInitShape<O>>
{
  private ended = false;
  /** The transport's taker while the domain finds the next message for it. */
  private taker: NextTaker<MessageShape<O>> | undefined;
  /** The watch's series (undefined for a stream that is no watch). */
  private readonly meter: WatchMeter | undefined;
  /** The state a watch opens with is not an event: no delivery delay for it. */
  private opening: boolean;

  constructor(
    private readonly steps: CallSteps,
    private readonly op: ServedStream<DescMessage, O>,
    private readonly ctx: CallContext,
    private readonly messages: AsyncIterator<MessageInitShape<O>>,
    private first: IteratorResult<MessageInitShape<O>> | undefined,
    private readonly started: number,
    private readonly span: CallSpan | undefined,
  ) {
    this.meter = op.watch === undefined ? undefined : steps.metrics.watches.open(op.watch.kind, ctx.protocol);
    this.opening = first !== undefined;
  }

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

  nextTo(taker: NextTaker<MessageShape<O>>): void {
    const first = this.first;
    if (this.ended || first !== undefined || !canPush(this.messages)) {
      this.next().then(
        (r) => taker.took(r),
        (e: unknown) => taker.failed(e),
      );
      return;
    }
    this.taker = taker;
    this.messages.nextTo(this);
  }

  /** The domain's next result, for the transport's taker (`nextTo`). */
  took(r: IteratorResult<MessageInitShape<O>>): void {
    this.handOn(this.take(r));
  }

  /** The domain failed, for the transport's taker (`nextTo`). */
  failed(e: unknown): void {
    this.handOn(this.fail(e));
  }

  private handOn(r: IteratorResult<MessageShape<O>> | Promise<IteratorResult<MessageShape<O>>>): void {
    const taker = this.taker as NextTaker<MessageShape<O>>;
    this.taker = undefined;
    if (!(r instanceof Promise)) taker.took(r);
    else
      r.then(
        (result) => taker.took(result),
        (e: unknown) => taker.failed(e),
      );
  }

  /** The transport stopped taking messages: the domain cleans up, then the call is counted. */
  return(): Promise<IteratorResult<MessageShape<O>>> {
    if (this.ended) return Promise.resolve(DONE);
    this.ended = true;
    return returnQuietly(this.messages).then(() => {
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
    const meter = this.meter;
    if (meter !== undefined) this.delivered(meter, r.value);
    try {
      return { done: false, value: create(this.op.method.output, r.value) };
    } catch (e) {
      return this.fail(e);
    }
  }

  private delivered(meter: WatchMeter, message: MessageInitShape<O>): void {
    if (this.opening) {
      this.opening = false;
      return;
    }
    const at = this.op.watch?.eventMs(message);
    if (at !== undefined) meter.delivered(at);
  }

  /** The stream failed: reported as a call's failure; the domain cleans up; the transport gets the failure. */
  private fail(thrown: unknown): Promise<IteratorResult<MessageShape<O>>> {
    if (this.ended) return Promise.resolve(DONE); // the transport had stopped taking messages
    this.ended = true;
    const e = this.steps.asFailure(this.ctx, thrown);
    const reported = this.steps.report(this.op, this.ctx, e);
    return returnQuietly(this.messages).then(() => {
      this.report(reported);
      throw e;
    });
  }

  /** Counts the call and ends its span: `reported` is its failure, or undefined for OK. */
  private report(reported: Reported | undefined): void {
    const { op, ctx, steps, span } = this;
    const code = reported === undefined ? "ok" : String(reported.p.code);
    steps.metrics.observeCall(op.method.name, ctx.protocol, code, this.started);
    this.meter?.ended();
    span?.end(reported === undefined ? SUCCEEDED : failed(ctx.protocol, reported.p, "stream-end", reported.cancelled));
  }
}

/**
 * Ends an iterator its consumer stops taking from, so its source cleans up: resolves once its
 * `return` has, whatever that does (even throw). The stream end and both fast transports use it.
 */
export function returnQuietly(it: AsyncIterator<unknown>): Promise<unknown> {
  return new Promise((resolve) => resolve(it.return?.())).catch(() => undefined);
}
