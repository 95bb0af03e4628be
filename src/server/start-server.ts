/**
 * Assembles the transport around the served methods: call pipeline → JSON
 * gateway, gRPC fast path and RPC router (+ health, reflection, ops
 * endpoints, the API reference) → dispatch → listener on one port. It knows nothing of the
 * domain: src/compose.ts hands it the methods to serve.
 */
import { setMaxListeners } from "node:events";
import { create, createFileRegistry, type DescFile, type FileRegistry } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { file_grpc_health_v1_health, Health } from "../../gen/grpc/health/v1/health_pb.js";
import { file_grpc_reflection_v1_reflection, ServerReflection } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import {
  file_grpc_reflection_v1alpha_reflection,
  ServerReflection as ServerReflectionAlpha,
} from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { atMostOncePer, type Logger } from "../log.js";
import type { Authenticator } from "../services/ports.js";
import type { CallTracer } from "../tracing/hooks.js";
import { apiDocs } from "./ops/api-docs.js";
import { CallPipeline } from "./call/pipeline.js";
import type { Openings } from "./call/openings.js";
import { ConversionWebhookEndpoint, type WebhookReceiver } from "./json/conversion-webhook.js";
import { Cors } from "./http/cors.js";
import { createDispatch } from "./dispatch.js";
import { GrpcFastPath } from "./rpc/grpc-fast-path.js";
import { registerHealth } from "./rpc/health.js";
import { JsonGateway } from "./json/gateway.js";
import { type ListenOptions, listen, type RunningServer } from "./http/listener.js";
import { Metrics } from "./ops/metrics.js";
import { watchDescriptors } from "./http/descriptor-watch.js";
import { OpsEndpoints } from "./ops/endpoints.js";
import { listenOps } from "./ops/listener.js";
import { registerReflection } from "./rpc/reflection.js";
import { RpcRouter } from "./rpc/router.js";
import type { ServedMethod, ServedStream } from "./call/served-methods.js";

export interface ServerOptions extends ListenOptions {
  readonly methods: readonly ServedMethod[];
  /** Server-streaming methods (the gRPC fast path, connect-es, and the JSON routes as server-sent events). */
  readonly streams?: readonly ServedStream[];
  readonly authenticator: Authenticator;
  /** Resolves when the store answers (readiness and health); rejects when it does not. */
  readonly storeReady: () => Promise<unknown>;
  readonly logger: Logger;
  readonly maxBodyBytes: number;
  readonly corsOrigins: readonly string[];
  /** Process-wide metrics (GC, memory) only for the real process, not for every test server. */
  readonly collectDefaultMetrics?: boolean;
  /** Serve `/metrics` (and `/healthz`, `/readyz`) on this port of `host` instead of the main one. */
  readonly metricsPort?: number;
  /** A span per call (OpenTelemetry); none when tracing is off. */
  readonly tracer?: CallTracer;
  /** Receive the conversion backend's webhooks (CONVERSION_WEBHOOK_BASE); none by default. */
  readonly conversionWebhook?: WebhookReceiver;
  /** The line server streams wait in to open (call/openings.ts); by default 64 at a time, the line unbounded. */
  readonly openings?: Openings;
}

export interface Server extends RunningServer {
  /**
   * Says "not ready" from now on (`/readyz` 503, gRPC health NOT_SERVING) while
   * serving everything as before: the start of a shutdown behind a load balancer.
   */
  unready(): void;
  readonly metrics: Metrics;
  /** The port `/metrics` is served on (the main port unless `metricsPort` was given). */
  readonly metricsPort: number;
}

export async function startServer(o: ServerOptions): Promise<Server> {
  const metrics = new Metrics({ collectDefault: o.collectDefaultMetrics ?? false });
  const pipeline = new CallPipeline(o.authenticator, o.logger, metrics, o.tracer, o.openings);
  // Draining starts at shutdown: readiness turns false and health Watch streams
  // end. In-flight calls are cancelled only when the grace period is over.
  const draining = new AbortController();
  const unready = new AbortController();
  const cancelCalls = new AbortController();
  // Every RPC in flight listens on it: more than 10 at once is normal, not a leak.
  setMaxListeners(0, cancelCalls.signal);
  const notReady = () => draining.signal.aborted || unready.signal.aborted;
  const ready = () =>
    notReady()
      ? Promise.resolve(false)
      : o.storeReady().then(
          () => true,
          () => false,
        );
  metrics.reportReadiness(ready);
  const streams = o.streams ?? [];
  const rpc = rpcRouter(o, pipeline, ready, draining.signal, cancelCalls.signal);
  const dispatch = createDispatch({
    fastPath: new GrpcFastPath({ methods: o.methods, streams, pipeline, maxBodyBytes: o.maxBodyBytes }),
    gateway: new JsonGateway([...o.methods, ...streams], pipeline, o.maxBodyBytes),
    rpc,
    ops: new OpsEndpoints({
      metrics: o.metricsPort === undefined ? metrics : undefined,
      ready,
      draining: notReady,
      logger: o.logger,
    }),
    webhook:
      o.conversionWebhook === undefined ? undefined : new ConversionWebhookEndpoint(o.conversionWebhook, o.logger),
    docs: apiDocs(),
    cors: new Cors(o.corsOrigins),
    logger: o.logger,
  });
  const onListenerError = listenerErrorReporter(o.logger, metrics);
  // 128 KiB of headers: room for a large (even hostile) bearer token to be
  // refused with a proper 401 rather than a bare 431.
  const running = await listen({ maxHeaderBytes: 128 * 1024, ...o, onListenerError }, dispatch);
  // Process-wide, like the default metrics: only for the real process.
  const stopWatchingDescriptors = o.collectDefaultMetrics ? watchDescriptors(onListenerError) : () => {};
  const opsPort =
    o.metricsPort === undefined
      ? undefined
      : await listenOps(
          o.host,
          o.metricsPort,
          new OpsEndpoints({ metrics, ready, draining: notReady, logger: o.logger }),
          onListenerError,
        );
  return {
    ...running,
    metrics,
    metricsPort: opsPort?.port ?? running.port,
    unready: () => unready.abort(),
    async shutdown(graceMs: number) {
      stopWatchingDescriptors();
      draining.abort();
      const cutOff = setTimeout(() => cancelCalls.abort(), graceMs);
      try {
        await running.shutdown(graceMs);
      } finally {
        clearTimeout(cutOff);
        cancelCalls.abort();
        await opsPort?.close();
      }
    },
  };
}

/** connect-es's router of the served methods and streams, with health and reflection beside them. */
function rpcRouter(
  o: ServerOptions,
  pipeline: CallPipeline,
  ready: () => Promise<boolean>,
  draining: AbortSignal,
  cancelCalls: AbortSignal,
): RpcRouter {
  const streams = o.streams ?? [];
  const services = [...new Set([...o.methods, ...streams].map((m) => m.method.parent))];
  return new RpcRouter({
    methods: o.methods,
    streams,
    pipeline,
    maxBodyBytes: o.maxBodyBytes,
    shutdownSignal: cancelCalls,
    logger: o.logger,
    register(router) {
      const served = services.map((s) => s.typeName);
      registerHealth(router, served, ready, draining);
      registerReflection(router, reflectionRegistry(services.map((s) => s.file)), [
        ...served,
        Health.typeName,
        ServerReflection.typeName,
        ServerReflectionAlpha.typeName,
      ]);
    },
  });
}

/** A registry of the served files, health, reflection and everything they import. */
function reflectionRegistry(served: readonly DescFile[]): FileRegistry {
  const files = [
    ...served,
    file_grpc_health_v1_health,
    file_grpc_reflection_v1_reflection,
    file_grpc_reflection_v1alpha_reflection,
  ];
  const ordered: DescFile[] = [];
  const seen = new Set<string>();
  const visit = (f: DescFile) => {
    if (seen.has(f.name)) return;
    seen.add(f.name);
    for (const d of f.dependencies) visit(d);
    ordered.push(f);
  };
  for (const f of files) visit(f);
  return createFileRegistry(create(FileDescriptorSetSchema, { file: ordered.map((f) => f.proto) }));
}

/**
 * What a listening socket's error after start gets (EMFILE: an accept found no
 * file descriptor left): counted in /metrics by code, and logged at most once a
 * second (with how many were not logged since), so a storm of them neither
 * floods the log nor goes unseen. The server serves on.
 */
function listenerErrorReporter(logger: Logger, metrics: Metrics): (error: NodeJS.ErrnoException) => void {
  const warn = atMostOncePer(1_000, (notLoggedSince, error: NodeJS.ErrnoException) =>
    logger.warn({ err: error, code: error.code, notLoggedSince }, "the listener is failing"),
  );
  return (error) => {
    metrics.countListenerError(error.code ?? "unknown");
    warn(error);
  };
}
