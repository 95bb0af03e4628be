/**
 * The CLIENT span of one exchange with the Netless API inside a traced call,
 * and the W3C `traceparent` (and `tracestate`) sent with it, so a trace
 * continues into Netless. Attributes: method, server, the URL without user
 * info, the answer's status; never a header (the `token` header is the
 * project's credential).
 */
import {
  context,
  defaultTextMapSetter,
  SpanKind,
  SpanStatusCode,
  type TextMapPropagator,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import type { ExchangeResult, ExchangeSpan, ExchangeStart, ExchangeTracer } from "./hooks.js";

export class OtelExchangeTracer implements ExchangeTracer {
  constructor(
    private readonly tracer: Tracer,
    private readonly propagator: TextMapPropagator,
  ) {}

  startExchange(x: ExchangeStart, headers: Record<string, string>): ExchangeSpan | undefined {
    const parent = trace.getSpan(context.active());
    if (parent === undefined || !parent.isRecording()) return undefined;
    const { url } = x;
    const span = this.tracer.startSpan(`netless ${x.operation}`, {
      kind: SpanKind.CLIENT,
      attributes: {
        "http.request.method": x.method,
        "server.address": url.hostname,
        "server.port": Number(url.port || (url.protocol === "https:" ? 443 : 80)),
        "url.full": `${url.origin}${url.pathname}${url.search}`,
        "boardline.netless.operation": x.operation,
      },
    });
    this.propagator.inject(trace.setSpan(context.active(), span), headers, defaultTextMapSetter);
    return {
      end(result: ExchangeResult) {
        if ("status" in result) {
          span.setAttribute("http.response.status_code", result.status);
          if (result.status >= 400) {
            span.setStatus({ code: SpanStatusCode.ERROR, message: String(result.status) });
            span.setAttribute("error.type", String(result.status));
          }
        } else {
          span.setStatus({ code: SpanStatusCode.ERROR, message: result.error });
          span.setAttribute("error.type", result.error);
        }
        span.end();
      },
    };
  }
}
