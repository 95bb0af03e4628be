/**
 * gRPC, gRPC-Web and Connect, through connect-es's universal handlers. This
 * is connect-node's `connectNodeAdapter`, plus the one thing it cannot do: fix
 * the gRPC status trailer before it is written (see grpc-status-trailer.ts).
 */

import { Code, ConnectError, createConnectRouter, createContextKey, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip, universalRequestFromNodeRequest, universalResponseToNodeResponse } from "@connectrpc/connect-node";
import type { UniversalHandler } from "@connectrpc/connect/protocol";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type { Logger } from "../log.js";
import type { Caller } from "../services/ports.js";
import { cancellationOf } from "./call-cancellation.js";
import { toConnectError } from "./error-table.js";
import { normalizeAtEnd, normalizeConnectError, normalizeGrpcWebAtEnd } from "./grpc-status-trailer.js";
import { parseJsonRequest } from "./json-gateway.js";
import type { CallContext, Operation, Pipeline } from "./operations.js";

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

/** Read options of the JSON codec, the same as the JSON routes'. */
const JSON_OPTIONS = { ignoreUnknownFields: true, useProtoFieldName: true } as const;

/** The caller the request gate authenticated, for the implementation. */
const CALLER = createContextKey<Caller | undefined>(undefined, { description: "boardline caller" });

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

export class RpcHandler {
  private readonly paths = new Map<string, UniversalHandler>();

  constructor(private readonly options: RpcHandlerOptions) {
    const router = createConnectRouter({
      readMaxBytes: options.maxBodyBytes,
      shutdownSignal: options.shutdownSignal,
      acceptCompression: [compressionGzip, compressionBrotli],
      // Output in proto field names (snake_case), like the JSON routes.
      jsonOptions: JSON_OPTIONS,
    });
    const callContext = (ctx: HandlerContext): CallContext => ({
      protocol: ctx.protocolName === "connect" ? "connect" : ctx.protocolName === "grpc" ? "grpc" : "grpc-web",
      authorization: ctx.requestHeader.get("authorization") ?? undefined,
      requestId: ctx.requestHeader.get("x-request-id") ?? "",
      cancellation: cancellationOf(ctx.signal),
    });
    for (const op of options.operations) {
      router.rpc(
        op.method,
        async (request, ctx) => {
          try {
            const caller = ctx.values.get(CALLER);
            return await options.pipeline.run(
              op,
              { ...callContext(ctx), ...(caller === undefined ? {} : { caller }) },
              () => request,
            );
          } catch (e) {
            throw toConnectError(e);
          }
        },
        {
          // connect-es decodes the request message before the implementation
          // runs: authenticate first (the contract's order of checks), so an
          // unauthenticated caller learns nothing about its body.
          requestGate: async (ctx) => {
            try {
              ctx.values.set(CALLER, await options.pipeline.authenticate(op, callContext(ctx)));
            } catch (e) {
              throw toConnectError(e);
            }
          },
          // A JSON body that does not decode gets the JSON routes' 611 message,
          // not connect-es's own text: connect-es hands the bytes to this
          // decoder first, and rethrows a ConnectError it throws as it is.
          jsonOptions: {
            ...JSON_OPTIONS,
            textDecoder: {
              decode(bytes: Uint8Array): string {
                try {
                  parseJsonRequest(op, bytes);
                } catch (e) {
                  throw toConnectError(e);
                }
                return utf8.decode(bytes);
              },
            },
          } as typeof JSON_OPTIONS,
        },
      );
    }
    options.register(router);
    for (const h of router.handlers) this.paths.set(h.requestPath, h);
  }

  has(path: string): boolean {
    return this.paths.has(path);
  }

  handle(path: string, req: NodeRequest, res: NodeResponse): void {
    const handler = this.paths.get(path);
    if (handler === undefined) throw new Error(`no rpc at ${path}`);
    const uReq = universalRequestFromNodeRequest(req, res, undefined, undefined);
    handler(uReq)
      .then(async (uRes) => {
        const contentType = String(req.headers["content-type"] ?? "");
        const body = uRes.body;
        if (/^application\/grpc-web/.test(contentType)) {
          if (body !== undefined && Symbol.asyncIterator in body) {
            return universalResponseToNodeResponse({ ...uRes, body: normalizeGrpcWebAtEnd(body) }, res);
          }
        } else if (/^application\/grpc/.test(contentType)) {
          if (uRes.trailer !== undefined && body !== undefined && Symbol.asyncIterator in body) {
            return universalResponseToNodeResponse({ ...uRes, body: normalizeAtEnd(body, uRes.trailer) }, res);
          }
        } else {
          return universalResponseToNodeResponse(await normalizeConnectError(uRes), res);
        }
        return universalResponseToNodeResponse(uRes, res);
      })
      .catch((reason: unknown) => {
        if (ConnectError.from(reason).code === Code.Aborted || ConnectError.from(reason).code === Code.Canceled) return;
        this.options.logger.warn({ err: reason, rpc: handler.method.name }, "writing the rpc response failed");
      });
  }
}


