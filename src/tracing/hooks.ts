/**
 * The tracing hooks the transports (src/server) and the Netless client
 * (src/netless) call, with no OpenTelemetry in them. The OpenTelemetry
 * implementation (otel-*.ts) is loaded only when tracing is on
 * (start-tracing.ts); with tracing off no OpenTelemetry module is loaded at
 * all, and each hook is one `undefined` check on the hot path.
 */
import type { IncomingHttpHeaders } from "node:http";

/** Where a call's incoming `traceparent` and `tracestate` are read: Node's headers, or a `Headers` (connect-es). */
export type TraceCarrier = IncomingHttpHeaders | Headers;

/** What a call span is started from. */
export interface CallStart {
  /** `channel.v1.PstnService` */
  readonly service: string;
  /** `Mute` */
  readonly method: string;
  readonly protocol: "json" | "connect" | "grpc" | "grpc-web";
  readonly requestId: string;
  /** The request's headers, for an incoming W3C trace context; none: a new trace. */
  readonly carrier: TraceCarrier | undefined;
  /** A JSON route: its HTTP method and path template. */
  readonly route: { readonly httpMethod: string; readonly template: string } | undefined;
  /** When the transport began the call (`performance.now()`), if before the pipeline; default: now. */
  readonly startedAt: number | undefined;
}

/** How a call ended, as its caller saw it. */
export interface CallOutcome {
  /** The gRPC status code (0 for OK) — the call's code on every protocol (the error table). */
  readonly grpcStatus: number;
  /** The HTTP status the protocol answered with (gRPC and gRPC-Web: 200). */
  readonly httpStatus: number;
  /** `ok`, or the documented error code (`611`, `403`…), as in the metrics. */
  readonly code: string;
  /** A failure of ours or of what we depend on (5xx), not a caller's mistake or a cancellation. */
  readonly serverFault: boolean;
}

export interface CallSpan {
  /** Runs `fn` with this span current, so the Redis commands and Netless exchanges it makes become its children. */
  within<T>(fn: () => T): T;
  end(outcome: CallOutcome): void;
}

export interface CallTracer {
  startCall(call: CallStart): CallSpan;
}

/** One HTTP exchange with the Netless API. */
export interface ExchangeStart {
  readonly method: string;
  readonly url: URL;
  /** `create`, `query`, `cancel` */
  readonly operation: string;
}

export type ExchangeResult = { readonly status: number } | { readonly error: "timeout" | "aborted" | "unreachable" };

export interface ExchangeSpan {
  end(result: ExchangeResult): void;
}

export interface ExchangeTracer {
  /**
   * The client span of one exchange made inside a traced call, with its W3C
   * `traceparent` (and `tracestate`) added to `headers`; undefined outside a
   * call (the conversion follower's polls are not traced).
   */
  startExchange(exchange: ExchangeStart, headers: Record<string, string>): ExchangeSpan | undefined;
}

/** Tracing, when it is on. */
export interface Tracing {
  readonly calls: CallTracer;
  readonly exchanges: ExchangeTracer;
  /** Exports the spans still buffered and stops. */
  shutdown(): Promise<void>;
}
