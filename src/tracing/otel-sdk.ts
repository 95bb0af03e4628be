/**
 * OpenTelemetry, started when OTEL_EXPORTER_OTLP_ENDPOINT is set (this module
 * is imported only then: start-tracing.ts). `@opentelemetry/sdk-node` reads
 * the standard `OTEL_*` variables itself — exporter protocol and headers,
 * sampler, batch settings, resource attributes — and exports the spans over
 * OTLP. boardline sets only what is its own: traces only (its metrics are
 * Prometheus, its logs pino), `service.name` `boardline` unless
 * OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise, and W3C trace
 * context as the one propagation format (in from callers, out to Netless;
 * no baggage is forwarded to a third party). The SDK's own diagnostics go to
 * the service's log, each distinct message at most once a minute.
 */
import { type DiagLogger, DiagLogLevel, diag, trace } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { defaultResource, resourceFromAttributes } from "@opentelemetry/resources";
import { startNodeSdk } from "@opentelemetry/sdk-node";
import type { Logger } from "../log.js";
import type { Tracing } from "./hooks.js";
import { OtelCallTracer } from "./otel-calls.js";
import { OtelExchangeTracer } from "./otel-exchanges.js";
import { traceRedisCommands } from "./otel-redis.js";

export interface OtelSettings {
  /** The default `service.name` (OTEL_SERVICE_NAME). */
  readonly serviceName: string;
  readonly logger: Logger;
}

export function startOtel(settings: OtelSettings): Tracing {
  const propagator = new W3CTraceContextPropagator();
  const sdk = startNodeSdk({
    logLevel: "warn",
    baseResource: defaultResource().merge(resourceFromAttributes({ "service.name": settings.serviceName })),
    propagators: [propagator],
    metricReaders: [],
    logRecordProcessors: [],
  });
  diag.setLogger(diagToLog(settings.logger), { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });
  const tracer = trace.getTracer("boardline");
  const stopRedis = traceRedisCommands(tracer);
  return {
    calls: new OtelCallTracer(tracer, propagator),
    exchanges: new OtelExchangeTracer(tracer, propagator),
    async shutdown() {
      stopRedis();
      // The spans still buffered go out; a collector that is away or slow never holds up or fails the shutdown.
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<"late">((resolve) => {
        timer = setTimeout(() => resolve("late"), SHUTDOWN_FLUSH_MS);
      });
      try {
        if ((await Promise.race([sdk.shutdown(), late])) === "late") {
          settings.logger.warn({ ms: SHUTDOWN_FLUSH_MS }, "traces not all exported at shutdown: the collector is slow");
        }
      } catch (e) {
        settings.logger.warn({ reason: e instanceof Error ? e.message : String(e) }, "traces not exported at shutdown");
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

const REPEAT_AFTER_MS = 60_000;
/** How long a shutdown waits for the last spans to be exported. */
const SHUTDOWN_FLUSH_MS = 2_000;

/** The SDK's diagnostics (e.g. a collector that cannot be reached) as log lines, a repeat at most once a minute. */
function diagToLog(logger: Logger): DiagLogger {
  const lastLogged = new Map<string, number>();
  const log =
    (level: "error" | "warn" | "info" | "debug") =>
    (message: string, ...args: unknown[]) => {
      const now = Date.now();
      const key = message.replace(/\d+/g, "#"); // "Dropped 12 spans…" and "Dropped 40 spans…" are one message
      if (now - (lastLogged.get(key) ?? Number.NEGATIVE_INFINITY) < REPEAT_AFTER_MS) return;
      if (lastLogged.size > 100) lastLogged.clear();
      lastLogged.set(key, now);
      // An error's name and message only: never an object that could carry request headers.
      const cause = args.find((a): a is Error => a instanceof Error);
      logger[level]({ component: "opentelemetry", ...(cause ? { reason: cause.message } : {}) }, message);
    };
  return { error: log("error"), warn: log("warn"), info: log("info"), debug: log("debug"), verbose: log("debug") };
}
