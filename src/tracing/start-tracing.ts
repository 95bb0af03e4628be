/**
 * Tracing is off unless OTEL_EXPORTER_OTLP_ENDPOINT is set. Only then is the
 * OpenTelemetry SDK imported (dynamically: a process with tracing off never
 * loads a module of it), started, and its hooks handed to the transports and
 * the Netless client (hooks.ts).
 */
import type { Logger } from "../log.js";
import type { Tracing } from "./hooks.js";

export interface TracingSettings {
  /** OTEL_EXPORTER_OTLP_ENDPOINT; the SDK reads it (and the other `OTEL_*` variables) itself. */
  readonly endpoint: string;
  /** OTEL_SERVICE_NAME, default `boardline`. */
  readonly serviceName: string;
}

/** Starts OpenTelemetry when `settings` says so; undefined: tracing is off. */
export async function startTracing(
  settings: TracingSettings | undefined,
  logger: Logger,
): Promise<Tracing | undefined> {
  if (settings === undefined) return undefined;
  const { startOtel } = await import("./otel-sdk.js");
  const tracing = startOtel({ serviceName: settings.serviceName, logger });
  const endpoint = new URL(settings.endpoint);
  endpoint.username = "";
  endpoint.password = "";
  logger.info({ endpoint: endpoint.href, serviceName: settings.serviceName }, "tracing is on (OpenTelemetry, OTLP)");
  return tracing;
}
