/**
 * Assembles the transport around the services: operations → pipeline → JSON
 * gateway + RPC router (+ health, reflection) → request listener → one port.
 */
import { setMaxListeners } from "node:events";
import { create, createFileRegistry, type DescFile, type FileRegistry } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { file_channel_v1_pstn, PstnService as PstnServiceDesc } from "../../gen/channel/v1/pstn_pb.js";
import { file_grpc_health_v1_health, Health } from "../../gen/grpc/health/v1/health_pb.js";
import { file_grpc_reflection_v1_reflection, ServerReflection } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import {
  file_grpc_reflection_v1alpha_reflection,
  ServerReflection as ServerReflectionAlpha,
} from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import {
  file_whiteboard_v1_whiteboard,
  WhiteboardService as WhiteboardServiceDesc,
} from "../../gen/whiteboard/v1/whiteboard_pb.js";
import type { Logger } from "../log.js";
import { noGuard, type PassphraseGuard } from "../services/passphrase-guard.js";
import type { Authenticator, ConversionBackend, Store } from "../services/ports.js";
import { PstnService } from "../services/pstn.js";
import { WhiteboardService } from "../services/whiteboard.js";
import { createRequestListener } from "./app.js";
import { Cors } from "./cors.js";
import { GrpcUnary } from "./grpc-unary.js";
import { registerHealth } from "./health.js";
import { JsonGateway, jsonRoutes } from "./json-gateway.js";
import { listen, type ListenOptions, type RunningServer } from "./listener.js";
import { Metrics } from "./metrics.js";
import { operations, Pipeline } from "./operations.js";
import { registerReflection } from "./reflection.js";
import { RpcHandler } from "./rpc-handler.js";

export interface ServerOptions extends ListenOptions {
  readonly store: Store;
  readonly authenticator: Authenticator;
  readonly backend: ConversionBackend;
  readonly guard?: PassphraseGuard;
  readonly logger: Logger;
  readonly maxBodyBytes: number;
  readonly corsOrigins: readonly string[];
  /** Process-wide metrics (GC, memory) only for the real process, not for every test server. */
  readonly collectDefaultMetrics?: boolean;
}

export interface Server extends RunningServer {
  readonly metrics: Metrics;
}

/** The services boardline serves, as reflection and health list them. */
export const SERVED_SERVICES = [
  WhiteboardServiceDesc.typeName,
  PstnServiceDesc.typeName,
  Health.typeName,
  ServerReflection.typeName,
  ServerReflectionAlpha.typeName,
];

export async function startServer(o: ServerOptions): Promise<Server> {
  const guard = o.guard ?? noGuard;
  const ops = operations({
    pstn: new PstnService(o.store, guard),
    whiteboard: new WhiteboardService(o.store, o.backend, guard),
  });
  const metrics = new Metrics({ collectDefault: o.collectDefaultMetrics ?? false });
  const pipeline = new Pipeline(o.authenticator, o.logger, metrics);
  // Draining starts at shutdown: readiness turns false and health Watch streams
  // end. In-flight calls are cancelled only when the grace period is over.
  const draining = new AbortController();
  const cancelCalls = new AbortController();
  // Every RPC in flight listens on it: more than 10 at once is normal, not a leak.
  setMaxListeners(0, cancelCalls.signal);
  const ready = () =>
    draining.signal.aborted
      ? Promise.resolve(false)
      : o.store.ping().then(
          () => true,
          () => false,
        );
  const registry = fileRegistry([
    file_whiteboard_v1_whiteboard,
    file_channel_v1_pstn,
    file_grpc_health_v1_health,
    file_grpc_reflection_v1_reflection,
    file_grpc_reflection_v1alpha_reflection,
  ]);
  const rpc = new RpcHandler({
    operations: ops,
    pipeline,
    maxBodyBytes: o.maxBodyBytes,
    shutdownSignal: cancelCalls.signal,
    logger: o.logger,
    register(router) {
      registerHealth(router, [WhiteboardServiceDesc.typeName, PstnServiceDesc.typeName], ready, draining.signal);
      registerReflection(router, registry, SERVED_SERVICES);
    },
  });
  const gateway = new JsonGateway(jsonRoutes(ops), pipeline, o.maxBodyBytes);
  const listener = createRequestListener({
    gateway,
    rpc,
    cors: new Cors(o.corsOrigins),
    metrics,
    ready,
    logger: o.logger,
  });
  // 128 KiB of headers: room for a large (even hostile) bearer token to be
  // refused with a proper 401 rather than a bare 431.
  const grpcUnary = new GrpcUnary({ operations: ops, pipeline, maxBodyBytes: o.maxBodyBytes });
  const running = await listen(
    { maxHeaderBytes: 128 * 1024, ...o, onStream: (stream, headers) => grpcUnary.handle(stream, headers) },
    listener,
  );
  return {
    ...running,
    metrics,
    async shutdown(graceMs: number) {
      draining.abort();
      const cutOff = setTimeout(() => cancelCalls.abort(), graceMs);
      try {
        await running.shutdown(graceMs);
      } finally {
        clearTimeout(cutOff);
        cancelCalls.abort();
      }
    },
  };
}

/** A registry of the given files and everything they import (for reflection). */
function fileRegistry(files: readonly DescFile[]): FileRegistry {
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
