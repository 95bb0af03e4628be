/**
 * What the call pipeline tells the tracer (src/tracing/hooks.ts): which call
 * it is, and how it ended — the gRPC status and documented code from the error
 * table, and the HTTP status each protocol answers with. Built only when
 * tracing is on.
 */
import type { CallOutcome, CallStart, TraceCarrier } from "../../tracing/hooks.js";
import { codeToHttpStatus } from "../rpc/connect-internals.js";
import type { PublicError } from "./error-table.js";
import type { Served } from "./served-methods.js";

type Protocol = CallStart["protocol"];

/** What a transport says of a call (the call pipeline's `CallContext` has all of it). */
interface Started {
  readonly protocol: Protocol;
  readonly requestId: string;
  readonly traceCarrier?: TraceCarrier | undefined;
  readonly route?: CallStart["route"];
  readonly startedAt?: number | undefined;
}

export function callStart(op: Served, ctx: Started): CallStart {
  return {
    service: op.method.parent.typeName,
    method: op.method.name,
    protocol: ctx.protocol,
    requestId: ctx.requestId,
    carrier: ctx.traceCarrier,
    route: ctx.route,
    startedAt: ctx.startedAt,
  };
}

export const SUCCEEDED: CallOutcome = { grpcStatus: 0, httpStatus: 200, code: "ok", serverFault: false };

/** Where a call failed: a unary call, a stream before its first message, or a stream after it (its 200 sent). */
export type FailedAt = "unary" | "stream-start" | "stream-end";

/** A failed call; `cancelled`: the client went away or its deadline passed — not a fault of ours. */
export function failed(protocol: Protocol, p: PublicError, at: FailedAt, cancelled: boolean): CallOutcome {
  let httpStatus = 200; // gRPC and gRPC-Web answer 200 and carry the status in trailers; so do streams once started
  if (protocol === "json" && at !== "stream-end") httpStatus = p.http;
  if (protocol === "connect" && at === "unary") httpStatus = codeToHttpStatus(p.grpc);
  return { grpcStatus: p.grpc, httpStatus, code: String(p.code), serverFault: p.http >= 500 && !cancelled };
}

/**
 * A call connect-es answered by itself with gRPC status `status` (a body it
 * could not read or decode), `code` being the documented code of it.
 */
export function unrunOutcome(protocol: Protocol, status: number, code: string, unary: boolean): CallOutcome {
  const httpStatus = protocol === "connect" && unary ? codeToHttpStatus(status) : 200;
  return { grpcStatus: status, httpStatus, code, serverFault: code === "ok" ? false : Number(code) >= 500 };
}
