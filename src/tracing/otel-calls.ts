/**
 * The span of one call (OpenTelemetry; loaded only when tracing is on). A
 * SERVER span named `package.Service/Method` on every protocol, whose parent
 * is the caller's W3C `traceparent` when it sent one (gRPC metadata, Connect
 * and JSON headers alike). Attributes: the RPC (`rpc.system`, `rpc.service`,
 * `rpc.method`), the protocol, the result (`rpc.grpc.status_code`,
 * `http.response.status_code`, `boardline.code`) and the request id; never a
 * header, a token or a message field. Status ERROR only for server faults.
 */
import {
  type Attributes,
  type Context,
  context,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  type TextMapPropagator,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import type { CallOutcome, CallSpan, CallStart, CallTracer, TraceCarrier } from "./hooks.js";

/** `rpc.system` per protocol: the semantic conventions' names, and ours for the JSON routes. */
const RPC_SYSTEMS: Readonly<Record<CallStart["protocol"], string>> = {
  grpc: "grpc",
  "grpc-web": "grpc",
  connect: "connect_rpc",
  json: "http_json",
};

/** Reads the W3C headers from either kind of carrier. */
const carrierGetter: TextMapGetter<TraceCarrier> = {
  get(carrier, key) {
    if (carrier instanceof Headers) return carrier.get(key) ?? undefined;
    return carrier[key];
  },
  keys(carrier) {
    return carrier instanceof Headers ? [...carrier.keys()] : Object.keys(carrier);
  },
};

export class OtelCallTracer implements CallTracer {
  constructor(
    private readonly tracer: Tracer,
    private readonly propagator: TextMapPropagator,
  ) {}

  startCall(call: CallStart): CallSpan {
    const parent =
      call.carrier === undefined ? ROOT_CONTEXT : this.propagator.extract(ROOT_CONTEXT, call.carrier, carrierGetter);
    const attributes: Attributes = {
      "rpc.system": RPC_SYSTEMS[call.protocol],
      "rpc.service": call.service,
      "rpc.method": call.method,
      "boardline.protocol": call.protocol,
      "boardline.request_id": call.requestId,
    };
    if (call.route !== undefined) {
      attributes["http.request.method"] = call.route.httpMethod;
      attributes["http.route"] = call.route.template;
    }
    const span = this.tracer.startSpan(
      `${call.service}/${call.method}`,
      { kind: SpanKind.SERVER, attributes, ...(call.startedAt === undefined ? {} : { startTime: call.startedAt }) },
      parent,
    );
    return new OtelCallSpan(span, trace.setSpan(parent, span));
  }
}

class OtelCallSpan implements CallSpan {
  constructor(
    private readonly span: Span,
    private readonly current: Context,
  ) {}

  within<T>(fn: () => T): T {
    return context.with(this.current, fn);
  }

  end(outcome: CallOutcome): void {
    this.span.setAttributes({
      "rpc.grpc.status_code": outcome.grpcStatus,
      "http.response.status_code": outcome.httpStatus,
      "boardline.code": outcome.code,
    });
    if (outcome.serverFault) {
      // The documented code only: an error's text may quote what the caller sent.
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.code });
      this.span.setAttribute("error.type", outcome.code);
    }
    this.span.end();
  }
}
