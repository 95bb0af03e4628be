/**
 * Where every request goes, whatever its protocol — read this first.
 *
 *   HTTP/2 stream ─► a gRPC call of a served method (unary or a watch), uncompressed?
 *        │              yes ─► gRPC fast path (grpc-fast-path.ts), straight off the raw stream
 *        │ no: Node's compatibility layer makes it a request
 *        ▼
 *   request (HTTP/1.1 or HTTP/2) ─► X-Request-Id, CORS (preflights end here)
 *        ├─ a JSON route (google.api.http; src/server/json/routes.ts) ─► JSON gateway (src/server/json/gateway.ts),
 *        │                                          or 405 for a known path with another method
 *        ├─ /v1/whiteboard/conversion-webhook/{id} ─► the backend's webhook (conversion-webhook.ts;
 *        │                                          only with CONVERSION_WEBHOOK_BASE; no JWT, a signed URL)
 *        ├─ an RPC path (/pkg.Service/Method)   ─► connect-es: Connect, gRPC-Web, other gRPC,
 *        │                                          health, reflection (src/server/rpc/router.ts)
 *        ├─ /healthz, /readyz, /metrics         ─► src/server/ops/endpoints.ts (/metrics here only in
 *        │                                          the demo or with METRICS_ON_PUBLIC_PORT, else on METRICS_PORT)
 *        ├─ /openapi.json, /docs (and its files) ─► api-docs.ts (the API reference)
 *        └─ anything else                       ─► 404 from the error table
 *
 * Every served method then runs the same call pipeline (src/server/call/pipeline.ts):
 * authenticate (from the headers, before the transport reads any of the body:
 * a bad token is answered at once) → read the request → validate → the domain
 * call (src/services), and every failure is shaped by the one error table
 * (error-table.ts). The webhook likewise checks its signature before its body.
 */
import type { IncomingHttpHeaders, ServerHttp2Stream } from "node:http2";
import type { Logger } from "../log.js";
import type { ApiDocs } from "./ops/api-docs.js";
import type { ConversionWebhookEndpoint } from "./json/conversion-webhook.js";
import type { Cors } from "./http/cors.js";
import { toJsonError, transportError } from "./call/error-table.js";
import type { GrpcFastPath } from "./rpc/grpc-fast-path.js";
import type { JsonGateway } from "./json/gateway.js";
import {
  type NodeRequest,
  type NodeResponse,
  pathOf,
  reply,
  requestIdFrom,
  sayingRequestId,
} from "./http/request-answer.js";
import { isStream } from "./call/served-methods.js";
import type { OpsEndpoints } from "./ops/endpoints.js";
import type { RpcRouter } from "./rpc/router.js";

export interface DispatchTargets {
  readonly fastPath: GrpcFastPath;
  readonly gateway: JsonGateway;
  readonly rpc: RpcRouter;
  readonly ops: OpsEndpoints;
  /** The conversion backend's webhook; only with CONVERSION_WEBHOOK_BASE. */
  readonly webhook: ConversionWebhookEndpoint | undefined;
  readonly docs: ApiDocs;
  readonly cors: Cors;
  readonly logger: Logger;
}

export interface Dispatch {
  /** Sees every HTTP/2 stream first; true when the gRPC fast path took it. */
  stream(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): boolean;
  /** Every request: HTTP/1.1, and the HTTP/2 streams the fast path left. */
  request(req: NodeRequest, res: NodeResponse): void;
}

export function createDispatch(t: DispatchTargets): Dispatch {
  return {
    stream: (stream, headers) => t.fastPath.handle(stream, headers),
    request(req, res) {
      const requestId = requestIdFrom(req.headers["x-request-id"]);
      req.headers["x-request-id"] = requestId; // connect-es reads it from here
      const path = pathOf(req.url ?? "/");
      const json = t.gateway.match(req.method ?? "GET", path);
      // Every answer says the request id; an event stream says it in its own head (sayingRequestId).
      if (json === undefined || "allow" in json || !isStream(json.route.served))
        res.setHeader("x-request-id", requestId);
      if (t.cors.apply(req, res)) return;

      const hook = t.webhook?.match(path);
      const failed = (e: unknown) => {
        t.logger.error({ err: e, requestId }, "request failed unexpectedly");
        reply(sayingRequestId(res, requestId), toJsonError(e));
      };
      if (json !== undefined && "allow" in json) {
        reply(res, transportError({ kind: "method_not_allowed", allow: json.allow }));
      } else if (json !== undefined) {
        t.gateway.handle(json, req, res, requestId).catch(failed);
      } else if (hook !== undefined) {
        t.webhook?.handle(hook, req, res, requestId).catch(failed);
      } else if (t.rpc.has(path)) {
        t.rpc.handle(path, req, res);
      } else if (t.ops.has(path)) {
        t.ops.handle(path, req, res);
      } else if (t.docs.has(path)) {
        t.docs.handle(path, req, res);
      } else {
        reply(res, transportError({ kind: "no_route" }));
      }
    },
  };
}
