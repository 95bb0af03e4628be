/**
 * What every call of the pipeline (pipeline.ts) shares: who authenticates,
 * the validator, the metrics, the tracer, how a failure is logged, and the
 * turns streams take to open (openings.ts). A call
 * holds one of these, so the pipeline's calls need no back reference to the
 * pipeline itself.
 */
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import { createValidator, type Validator } from "@bufbuild/protovalidate";
import type { Logger } from "../../log.js";
import { Failure } from "../../services/failure.js";
import type { Authenticator } from "../../services/ports.js";
import type { CallTracer, TraceCarrier } from "../../tracing/hooks.js";
import { type Cancellation, DEADLINE_PASSED } from "./cancellation.js";
import { isUnexpected, type PublicError, publicError } from "./error-table.js";
import type { Metrics } from "../ops/metrics.js";
import { tokenRefusal } from "../../services/token-refusal.js";
import { matchPattern } from "./pattern-match.js";
import type { CallMetadata, Served } from "./served-methods.js";
import { Openings } from "./openings.js";

/** One call as its transport hands it over; its metadata goes on to the domain call. */
export interface CallContext extends CallMetadata {
  readonly protocol: "json" | "connect" | "grpc" | "grpc-web";
  readonly authorization: string | undefined;
  readonly requestId: string;
  /** The client went away or the deadline passed. */
  readonly cancellation: Cancellation;
  /** The request's headers: tracing honours an incoming `traceparent` from them. */
  readonly traceCarrier?: TraceCarrier | undefined;
  /** A JSON route's method and path template (for the trace). */
  readonly route?: { readonly httpMethod: string; readonly template: string };
  /** When the transport began the call (`performance.now()`), if before `run` (the RPC router authenticates first). */
  readonly startedAt?: number | undefined;
}

/** What a failed call's caller was told, and whether the call had been cancelled (client gone, deadline passed). */
export interface Reported {
  readonly p: PublicError;
  readonly cancelled: boolean;
}

export class CallSteps {
  private readonly validator: Validator = createValidator({ regexMatch: matchPattern });

  constructor(
    readonly auth: Authenticator,
    private readonly logger: Logger,
    readonly metrics: Metrics,
    /** Tracing; undefined when it is off (then no span is made and nothing else is done). */
    readonly tracer: CallTracer | undefined,
    /** Streams being opened, a few at a time. */
    readonly openings: Openings = new Openings(),
  ) {}

  /** What the domain threw because the call's deadline cancelled it is the deadline's failure, not ours. */
  asFailure(ctx: CallContext, thrown: unknown): unknown {
    return ctx.cancellation.deadlinePassed && !(thrown instanceof Failure) ? deadlinePassed(thrown) : thrown;
  }

  /** Logs a failure as it deserves; returns what the caller is told. */
  report(op: Served, ctx: CallContext, e: unknown): Reported {
    const p = publicError(e);
    const refusal = tokenRefusal(e);
    if (refusal !== undefined) this.metrics.security.tokenRefused(refusal);
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

  validate(schema: DescMessage, message: MessageShape<DescMessage>): void {
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
