/**
 * The error contract (docs/architecture.md, "Error table"), in one place.
 * Every failure that leaves the service — on a JSON route, a plain endpoint,
 * over Connect, gRPC or gRPC-Web — is shaped here: the gRPC code, the HTTP
 * status, the documented numeric `error.code`, and the message. Nothing else
 * in the code base picks a status or a code.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { Failure, type FailureKind } from "../services/failure.js";

/** The exact text the contract prescribes for every invalid request (code 611). */
export const INVALID_REQUEST_MESSAGE = "the API request is invalid, improperly formed, or missing a required field";

/** The `domain` of the `google.rpc.ErrorInfo` detail attached to every error. */
export const ERROR_DOMAIN = "boardline";

interface Row {
  readonly grpc: Code;
  readonly http: number;
  /** The documented `error.code`. */
  readonly code: number;
  /** The `ErrorInfo.reason`, UPPER_SNAKE_CASE as google.rpc prescribes. */
  readonly reason: string;
  /** The message when the failure carries no safe detail of its own. */
  readonly message: string;
}

const table: Record<FailureKind, Row> = {
  invalid: {
    grpc: Code.InvalidArgument,
    http: 400,
    code: 611,
    reason: "INVALID_REQUEST",
    message: INVALID_REQUEST_MESSAGE,
  },
  unauthenticated: {
    grpc: Code.Unauthenticated,
    http: 401,
    code: 401,
    reason: "UNAUTHENTICATED",
    message: "a valid Bearer token is required",
  },
  permission_denied: {
    grpc: Code.PermissionDenied,
    http: 403,
    code: 403,
    reason: "PERMISSION_DENIED",
    message: "permission denied",
  },
  not_found: { grpc: Code.NotFound, http: 404, code: 404, reason: "NOT_FOUND", message: "not found" },
  rate_limited: {
    grpc: Code.ResourceExhausted,
    http: 429,
    code: 429,
    reason: "RATE_LIMITED",
    message: "too many requests, retry later",
  },
  failed_precondition: {
    grpc: Code.FailedPrecondition,
    http: 409,
    code: 409,
    reason: "FAILED_PRECONDITION",
    message: "the request cannot be carried out in the resource's current state",
  },
  unavailable: {
    grpc: Code.Unavailable,
    http: 503,
    code: 503,
    reason: "UNAVAILABLE",
    message: "the service is temporarily unavailable, retry later",
  },
  deadline_exceeded: {
    grpc: Code.DeadlineExceeded,
    http: 504,
    code: 504,
    reason: "BACKEND_TIMEOUT",
    message: "the conversion backend did not answer in time",
  },
  internal: { grpc: Code.Internal, http: 500, code: 500, reason: "INTERNAL", message: "internal server error" },
};

/** What a caller is told about a failure, independent of the protocol. */
export interface PublicError {
  readonly kind: FailureKind;
  readonly grpc: Code;
  readonly http: number;
  readonly code: number;
  readonly reason: string;
  readonly message: string;
  readonly retryAfterSeconds: number | undefined;
}

/**
 * Turns anything thrown into what the caller may see. A `Failure` keeps its
 * kind and its safe detail; anything else becomes a bare 500 — its text stays
 * in the logs (see `isUnexpected`).
 */
export function publicError(e: unknown): PublicError {
  const failure = e instanceof Failure ? e : new Failure("internal", { cause: e });
  const row = table[failure.kind];
  let message = row.message;
  if (failure.detail !== undefined) {
    message = failure.kind === "invalid" ? `${INVALID_REQUEST_MESSAGE}: ${failure.detail}` : failure.detail;
  }
  return {
    kind: failure.kind,
    grpc: row.grpc,
    http: row.http,
    code: row.code,
    reason: row.reason,
    message,
    retryAfterSeconds: failure.retryAfterSeconds,
  };
}

/**
 * The documented code of a gRPC status that connect-es answered with on its
 * own (the error table's row with that status; anything else counts as 500).
 */
export function documentedCodeOf(status: Code): number {
  for (const row of Object.values(table)) if (row.grpc === status) return row.code;
  return table.internal.code;
}

/** True for errors that deserve an error-level log line (not caller mistakes). */
export function isUnexpected(e: unknown): boolean {
  return !(e instanceof Failure) || e.kind === "internal";
}

/** The `ConnectError` for Connect, gRPC and gRPC-Web callers, with an `ErrorInfo` detail. */
export function toConnectError(e: unknown): ConnectError {
  const p = publicError(e);
  const metadata: Record<string, string> = { code: String(p.code) };
  if (p.retryAfterSeconds !== undefined) metadata["retry_after_seconds"] = String(p.retryAfterSeconds);
  const err = new ConnectError(p.message, p.grpc, undefined, [
    { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason: p.reason, domain: ERROR_DOMAIN, metadata }) },
  ]);
  return err;
}

/** The status, headers and body of a failure on a JSON route. */
export function toJsonError(e: unknown): { status: number; headers: Record<string, string>; body: string } {
  const p = publicError(e);
  const headers: Record<string, string> = {};
  if (p.kind === "unauthenticated") headers["www-authenticate"] = 'Bearer realm="boardline"';
  if (p.retryAfterSeconds !== undefined) headers["retry-after"] = String(p.retryAfterSeconds);
  return { status: p.http, headers, body: JSON.stringify({ error: { code: p.code, message: p.message } }) };
}

/**
 * Failures the HTTP layer raises before a request reaches the call pipeline
 * (JSON routes and the plain endpoints; the RPC protocols have their own).
 */
export type TransportFailure =
  | { readonly kind: "no_route" }
  | { readonly kind: "method_not_allowed"; readonly allow: readonly string[] }
  | { readonly kind: "body_too_large"; readonly limit: number }
  | { readonly kind: "unsupported_media_type" };

type TransportRow<F extends TransportFailure> = { readonly http: number; readonly code: number; message(f: F): string };

const transportTable: {
  readonly [K in TransportFailure["kind"]]: TransportRow<Extract<TransportFailure, { kind: K }>>;
} = {
  no_route: { http: 404, code: 404, message: () => "no such route" },
  method_not_allowed: { http: 405, code: 405, message: (f) => `method not allowed; use ${f.allow.join(" or ")}` },
  body_too_large: { http: 413, code: 611, message: (f) => `${INVALID_REQUEST_MESSAGE}: body exceeds ${f.limit} bytes` },
  unsupported_media_type: {
    http: 415,
    code: 611,
    message: () => `${INVALID_REQUEST_MESSAGE}: Content-Type must be application/json`,
  },
};

/** The status, headers and body of a transport failure (`Allow` goes with 405). */
export function transportError(f: TransportFailure): {
  status: number;
  headers: Record<string, string>;
  body: string;
} {
  const row = transportTable[f.kind] as TransportRow<TransportFailure>;
  const headers: Record<string, string> = f.kind === "method_not_allowed" ? { allow: f.allow.join(", ") } : {};
  return { status: row.http, headers, body: JSON.stringify({ error: { code: row.code, message: row.message(f) } }) };
}
