/**
 * The gRPC fast path answers a failure with `grpcErrorStatus`, which encodes
 * the status once; connect-es's `setTrailerStatus` on `toConnectError`, with
 * the message re-encoded per the gRPC spec, is what it used to send and what
 * the connect-es paths still send. The two must be byte for byte the same.
 */
import { describe, expect, it } from "vitest";
import { toConnectError } from "../../../src/server/call/error-table.js";
import { setTrailerStatus } from "../../../src/server/rpc/connect-internals.js";
import { encodeGrpcMessage, grpcErrorStatus } from "../../../src/server/rpc/grpc-status-trailer.js";
import { Failure } from "../../../src/services/failure.js";

/** What the fast path sent before: connect-es's trailer, its grpc-message decoded and re-encoded. */
function viaConnectEs(e: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of setTrailerStatus(new Headers(), toConnectError(e))) {
    out[k] = k === "grpc-message" ? encodeGrpcMessage(decodeURIComponent(v)) : v;
  }
  return out;
}

const failures: Array<[string, unknown]> = [
  ["invalid, no detail", new Failure("invalid")],
  ["invalid, a detail with , : / and %", new Failure("invalid", { detail: "uid: 50% of a/b, c" })],
  ["unauthenticated", new Failure("unauthenticated")],
  ["permission denied, non-ASCII detail", new Failure("permission_denied", { detail: "Zugriff verweigert — 拒否" })],
  ["rate limited with Retry-After", new Failure("rate_limited", { retryAfterSeconds: 17 })],
  ["unavailable with Retry-After", new Failure("unavailable", { detail: "busy", retryAfterSeconds: 2 })],
  ["idempotency key busy", new Failure("idempotency_key_busy", { retryAfterSeconds: 1 })],
  ["deadline exceeded", new Failure("deadline_exceeded", { detail: "deadline passed" })],
  ["a control character in the detail", new Failure("not_found", { detail: "line\nbreak\ttab" })],
  ["not a Failure: internal", new Error("secret text")],
  ["thrown non-error", "a string"],
];

describe("grpcErrorStatus", () => {
  it.each(failures)("%s: the same three fields as connect-es's trailer", (_name, e) => {
    const ours = grpcErrorStatus(e);
    expect({ ...ours }).toEqual(viaConnectEs(e));
    expect(Object.keys(ours)).toEqual(Object.keys(viaConnectEs(e))); // the same header order on the wire
  });
});
