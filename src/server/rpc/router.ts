/**
 * gRPC, gRPC-Web and Connect through connect-es's universal handlers, for
 * everything the gRPC fast path does not take (Connect and gRPC-Web, gRPC
 * calls that are compressed or carry JSON, health and reflection). This is
 * connect-node's `connectNodeAdapter`, plus the one thing it cannot do: fix
 * the status on its way out so it follows the error table
 * (grpc-status-trailer.ts).
 */
import {
  Code,
  ConnectError,
  type ConnectRouter,
  createConnectRouter,
  createContextKey,
  createContextValues,
  type HandlerContext,
} from "@connectrpc/connect";
import {
  compressionBrotli,
  compressionGzip,
  universalRequestFromNodeRequest,
  universalResponseToNodeResponse,
} from "@connectrpc/connect-node";
import type { Logger } from "../../log.js";
import { cancellationOf } from "../call/cancellation.js";
import type { CallContext, CallPipeline, StreamCall, UnaryCall } from "../call/pipeline.js";
import { dropUnarmableDeadline } from "../call/cancellation.js";
import { type UniversalHandler, type UniversalServerResponse, withJsonBodyCheck } from "./connect-internals.js";
import { toConnectError } from "../call/error-table.js";
import {
  normalizeAtEnd,
  normalizeConnectError,
  normalizeGrpcWebAtEnd,
  type StatusListener,
} from "./grpc-status-trailer.js";
import { decodeUtf8, parseJsonRequest } from "../json/request.js";
import type { NodeRequest, NodeResponse } from "../http/request-answer.js";
import { IDEMPOTENCY_KEY_HEADER, type Served, type ServedMethod, type ServedStream } from "../call/served-methods.js";

export interface RpcRouterOptions {
  readonly methods: readonly ServedMethod[];
  readonly streams?: readonly ServedStream[];
  readonly pipeline: CallPipeline;
  readonly maxBodyBytes: number;
  readonly shutdownSignal: AbortSignal;
  readonly logger: Logger;
  /** Extra services (health, reflection). */
  readonly register: (router: ConnectRouter) => void;
}

/** Read options of the JSON codec, the same as the JSON routes'. */
const JSON_OPTIONS = { ignoreUnknownFields: true, useProtoFieldName: true } as const;

/**
 * One RPC as `handle` sees it. The pipeline's call for it is begun in
 * connect-es's request gate (the first point that has the call's context) and
 * kept here, so that `handle` can abandon it on close when connect-es answered
 * it without running it (its body could not be read or decoded).
 */
interface RpcCall {
  /** When `handle` began the call (`performance.now()`). */
  readonly startedAt: number;
  call: UnaryCall | StreamCall | undefined;
}
const RPC_CALL = createContextKey<RpcCall | undefined>(undefined, { description: "boardline rpc call" });

/** The call as the pipeline sees it. */
function callContext(ctx: HandlerContext): CallContext {
  return {
    protocol: ctx.protocolName === "connect" ? "connect" : ctx.protocolName === "grpc" ? "grpc" : "grpc-web",
    authorization: ctx.requestHeader.get("authorization") ?? undefined,
    requestId: ctx.requestHeader.get("x-request-id") ?? "",
    cancellation: cancellationOf(ctx.signal),
    traceCarrier: ctx.requestHeader,
    startedAt: ctx.values.get(RPC_CALL)?.startedAt,
    idempotencyKey: ctx.requestHeader.get(IDEMPOTENCY_KEY_HEADER) ?? undefined,
  };
}

/**
 * The pipeline's call of one method, for its request gate (which begins and
 * authenticates it) and its implementation (which runs it). The request gate
 * always comes first; should it not have, the implementation begins the call.
 */
class GatedCalls<C extends UnaryCall | StreamCall> {
  private readonly key = createContextKey<C | undefined>(undefined, { description: "boardline call" });

  constructor(private readonly beginCall: (ctx: CallContext) => C) {}

  /** connect-es's request gate: authenticate before the body is read. */
  readonly requestGate = async (ctx: HandlerContext): Promise<void> => {
    try {
      await this.begin(ctx).authenticate();
    } catch (e) {
      throw toConnectError(e);
    }
  };

  of(ctx: HandlerContext): C {
    return ctx.values.get(this.key) ?? this.begin(ctx);
  }

  private begin(ctx: HandlerContext): C {
    const call = this.beginCall(callContext(ctx));
    ctx.values.set(this.key, call);
    const rpc = ctx.values.get(RPC_CALL);
    if (rpc !== undefined) rpc.call = call;
    return call;
  }
}

function protocolOf(contentType: string): CallContext["protocol"] {
  if (/^application\/grpc-web/.test(contentType)) return "grpc-web";
  if (/^application\/grpc/.test(contentType)) return "grpc";
  return "connect";
}

export class RpcRouter {
  private readonly paths = new Map<string, UniversalHandler>();

  constructor(private readonly options: RpcRouterOptions) {
    const router = createConnectRouter({
      readMaxBytes: options.maxBodyBytes,
      shutdownSignal: options.shutdownSignal,
      acceptCompression: [compressionGzip, compressionBrotli],
      // Output in proto field names (snake_case), like the JSON routes.
      jsonOptions: JSON_OPTIONS,
    });
    const pipeline = options.pipeline;
    for (const op of options.methods) {
      const calls = new GatedCalls((ctx) => pipeline.begin(op, ctx));
      router.rpc(
        op.method,
        async (request, ctx) => {
          try {
            return await calls.of(ctx).run(() => request);
          } catch (e) {
            throw toConnectError(e);
          }
        },
        this.handlerOptions(op, calls.requestGate),
      );
    }
    for (const op of options.streams ?? []) {
      const calls = new GatedCalls((ctx) => pipeline.begin(op, ctx));
      router.rpc(
        op.method,
        async function* (request, ctx) {
          try {
            yield* await calls.of(ctx).runStream(() => request);
          } catch (e) {
            throw toConnectError(e);
          }
        },
        this.handlerOptions(op, calls.requestGate),
      );
    }
    options.register(router);
    for (const h of router.handlers) this.paths.set(h.requestPath, h);
  }

  /**
   * connect-es decodes the request message before the implementation runs:
   * authenticate first in its request gate (the contract's order of checks),
   * so an unauthenticated caller learns nothing about its body. And a JSON
   * body that does not decode gets the JSON routes' 611 message, not
   * connect-es's own text (connect-internals.ts, assumption 5).
   */
  private handlerOptions(op: Served, requestGate: (ctx: HandlerContext) => Promise<void>) {
    return {
      requestGate,
      jsonOptions: withJsonBodyCheck(
        JSON_OPTIONS,
        (bytes) => {
          try {
            parseJsonRequest(op.method.input, bytes);
          } catch (e) {
            throw toConnectError(e);
          }
        },
        decodeUtf8,
      ),
    };
  }

  has(path: string): boolean {
    return this.paths.has(path);
  }

  handle(path: string, req: NodeRequest, res: NodeResponse): void {
    const handler = this.paths.get(path);
    if (handler === undefined) throw new Error(`no rpc at ${path}`);
    const started = performance.now();
    const contentType = String(req.headers["content-type"] ?? "");
    const protocol = protocolOf(contentType);
    const rpc: RpcCall = { startedAt: started, call: undefined };
    let status: number = Code.Unknown;
    const onStatus = (s: number) => {
      status = s;
    };
    // Counted when the response is done (connect-node's universalResponseToNodeResponse
    // waits for an "end" event that a Node response never emits, so its promise is no signal).
    res.once("close", () => {
      if (rpc.call?.ran === true) return; // the call pipeline counted and logged it
      if (status === Code.Internal) {
        // connect-es answered INTERNAL by itself: only ever our bug (client errors map to the table).
        this.options.logger.error({ rpc: handler.method.name, protocol, path }, "rpc answered INTERNAL");
      }
      rpc.call?.abandon(status);
    });
    // A deadline longer than a timer can hold means none (src/server/call/cancellation.ts).
    dropUnarmableDeadline(req.headers);
    const uReq = universalRequestFromNodeRequest(req, res, undefined, createContextValues().set(RPC_CALL, rpc));
    handler(uReq)
      .then((uRes) => respond(uRes, protocol, onStatus, res))
      .catch((reason: unknown) => {
        if (ConnectError.from(reason).code === Code.Aborted || ConnectError.from(reason).code === Code.Canceled) return;
        this.options.logger.warn({ err: reason, rpc: handler.method.name }, "writing the rpc response failed");
      });
  }
}

/** Writes connect-es's response, its status rewritten to follow the error table on the way out. */
async function respond(
  uRes: UniversalServerResponse,
  protocol: CallContext["protocol"],
  onStatus: StatusListener,
  res: NodeResponse,
): Promise<void> {
  const body = uRes.body;
  const iterable = body !== undefined && Symbol.asyncIterator in body;
  if (protocol === "grpc-web" && iterable) {
    return universalResponseToNodeResponse({ ...uRes, body: normalizeGrpcWebAtEnd(body, onStatus) }, res);
  }
  if (protocol === "grpc" && iterable && uRes.trailer !== undefined) {
    return universalResponseToNodeResponse({ ...uRes, body: normalizeAtEnd(body, uRes.trailer, onStatus) }, res);
  }
  if (protocol === "connect") {
    return universalResponseToNodeResponse(await normalizeConnectError(uRes, onStatus), res);
  }
  return universalResponseToNodeResponse(uRes, res);
}
