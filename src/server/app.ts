/**
 * The request listener shared by the HTTP/1.1 and HTTP/2 servers: request id,
 * CORS, then the route — a JSON route (json-gateway.ts), an RPC path
 * (rpc-handler.ts), or one of the plain HTTP endpoints below.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "../log.js";
import type { Cors } from "./cors.js";
import { toJsonError, transportFailures } from "./error-table.js";
import type { JsonGateway } from "./json-gateway.js";
import type { Metrics } from "./metrics.js";
import { type Answer, reply } from "./reply.js";
import type { NodeRequest, NodeResponse, RpcHandler } from "./rpc-handler.js";

export interface AppOptions {
  readonly gateway: JsonGateway;
  readonly rpc: RpcHandler;
  readonly cors: Cors;
  readonly metrics: Metrics;
  /** Resolves true when the store answers. */
  readonly ready: () => Promise<boolean>;
  readonly logger: Logger;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function createRequestListener(o: AppOptions): (req: NodeRequest, res: NodeResponse) => void {
  return (req, res) => {
    const given = req.headers["x-request-id"];
    const requestId = typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
    req.headers["x-request-id"] = requestId;
    res.setHeader("x-request-id", requestId);
    if (o.cors.apply(req, res)) return;

    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const path = q < 0 ? url : url.slice(0, q);

    const route = o.gateway.route(path);
    if (route !== undefined) {
      o.gateway.handle(route, req, res, requestId).catch((e: unknown) => fail(res, e, o.logger));
      return;
    }
    if (o.rpc.has(path)) {
      o.rpc.handle(path, req, res);
      return;
    }
    switch (path) {
      case "/healthz":
        return plain(req, res, async () => ({ status: 200, body: '{"status":"ok"}' }), o.logger);
      case "/readyz":
        return plain(
          req,
          res,
          async () =>
            (await o.ready())
              ? { status: 200, body: '{"status":"ready"}' }
              : { status: 503, body: '{"status":"unavailable","reason":"the store does not answer"}' },
          o.logger,
        );
      case "/metrics":
        return plain(
          req,
          res,
          async () => {
            const m = await o.metrics.render();
            return { status: 200, body: m.body, contentType: m.contentType };
          },
          o.logger,
        );
      default:
        reply(res, transportFailures.notFound());
    }
  };
}

function plain(req: NodeRequest, res: NodeResponse, answer: () => Promise<Answer>, logger: Logger): void {
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.setHeader("allow", "GET, HEAD");
    reply(res, transportFailures.methodNotAllowed());
    return;
  }
  req.resume();
  answer()
    .then((a) => {
      res.setHeader("cache-control", "no-store");
      reply(res, a, req.method === "HEAD");
    })
    .catch((e: unknown) => fail(res, e, logger));
}

function fail(res: NodeResponse, e: unknown, logger: Logger): void {
  logger.error({ err: e }, "request failed unexpectedly");
  reply(res, toJsonError(e));
}
