/**
 * gRPC, gRPC-Web and Connect, through connect-es's universal handlers. This
 * is connect-node's `connectNodeAdapter`, plus the one thing it cannot do: fix
 * the gRPC status trailer before it is written (see grpc-status-trailer.ts).
 */

import { Code, ConnectError, createConnectRouter, type ConnectRouter } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip, universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type { Logger } from "../log.js";
import { toConnectError } from "./error-table.js";
import { normalizeAtEnd } from "./grpc-status-trailer.js";
import type { Operation, Pipeline } from "./operations.js";

export type NodeRequest = IncomingMessage | Http2ServerRequest;
export type NodeResponse = ServerResponse | Http2ServerResponse;

export interface RpcHandlerOptions {
  readonly operations: readonly Operation[];
  readonly pipeline: Pipeline;
  readonly maxBodyBytes: number;
  readonly shutdownSignal: AbortSignal;
  readonly logger: Logger;
  /** Extra services (health, reflection). */
  readonly register: (router: ConnectRouter) => void;
}

export class RpcHandler {
  private readonly paths = new Map<string, UniversalHandler>();

  constructor(private readonly options: RpcHandlerOptions) {
    const router = createConnectRouter({
      readMaxBytes: options.maxBodyBytes,
      shutdownSignal: options.shutdownSignal,
      acceptCompression: [compressionGzip, compressionBrotli],
      // Output in proto field names (snake_case), like the JSON routes.
      jsonOptions: { ignoreUnknownFields: true, useProtoFieldName: true },
    });
    for (const op of options.operations) {
      router.rpc(op.method, async (request, ctx) => {
        const protocol = ctx.protocolName === "connect" ? "connect" : ctx.protocolName === "grpc" ? "grpc" : "grpc-web";
        try {
          return await options.pipeline.run(
            op,
            {
              protocol,
              authorization: ctx.requestHeader.get("authorization") ?? undefined,
              requestId: ctx.requestHeader.get("x-request-id") ?? "",
              signal: ctx.signal,
            },
            () => request,
          );
        } catch (e) {
          throw toConnectError(e);
        }
      });
    }
    options.register(router);
    for (const h of router.handlers) this.paths.set(h.requestPath, h);
  }

  /** The fully-qualified names of the services served. */
  get serviceNames(): string[] {
    return [...new Set([...this.paths.values()].map((h) => h.service.typeName))];
  }

  has(path: string): boolean {
    return this.paths.has(path);
  }

  handle(path: string, req: NodeRequest, res: NodeResponse): void {
    const handler = this.paths.get(path);
    if (handler === undefined) throw new Error(`no rpc at ${path}`);
    const uReq = universalRequestFromNodeRequest(req, res, undefined, undefined);
    handler(uReq)
      .then((uRes) => {
        if (uRes.trailer !== undefined && uRes.body !== undefined && handler.protocolNames.includes("grpc")) {
          const isGrpc = /^application\/grpc(?!-web)/.test(String(req.headers["content-type"] ?? ""));
          if (isGrpc && Symbol.asyncIterator in uRes.body) {
            return universalResponseToNodeResponse(
              { ...uRes, body: normalizeAtEnd(uRes.body, uRes.trailer) },
              res,
            );
          }
        }
        return universalResponseToNodeResponse(uRes, res);
      })
      .catch((reason: unknown) => {
        if (ConnectError.from(reason).code === Code.Aborted || ConnectError.from(reason).code === Code.Canceled) return;
        this.options.logger.warn({ err: reason, rpc: handler.method.name }, "writing the rpc response failed");
      });
  }
}


