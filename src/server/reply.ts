/**
 * Writing a small complete answer, and reading a header that Node may give as
 * a list — the two bits of plain HTTP the request listener, the JSON gateway
 * and the gRPC fast path share.
 */
import type { NodeResponse } from "./rpc-handler.js";

export interface Answer {
  readonly status: number;
  readonly body: string;
  /** Default `application/json`. */
  readonly contentType?: string;
}

/** Sends the whole answer (no body for HEAD); ends a response whose headers already went out. */
export function reply(res: NodeResponse, a: Answer, headOnly = false): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.statusCode = a.status;
  res.setHeader("content-type", a.contentType ?? "application/json");
  res.setHeader("content-length", Buffer.byteLength(a.body));
  if (headOnly) res.end();
  else res.end(a.body);
}

/** The first value of a request header. */
export function firstHeader(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}
