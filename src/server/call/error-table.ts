/**
 * The error contract, in one place (docs/errors.md is rendered from it, with
 * what a caller does with each row from error-guidance.ts).
 * Every failure that leaves the service — on a JSON route, a plain endpoint,
 * over Connect, gRPC or gRPC-Web — is shaped here: the gRPC code, the HTTP
 * status, the documented numeric `error.code`, and the message. Nothing else
 * in the code base picks a status or a code. Rows may share an HTTP status
 * (409, 429): the kind and the ErrorInfo reason tell them apart. The OpenAPI
 * document lists the rows by status (error-docs.ts).
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { type ErrorInfo, ErrorInfoSchema } from "../../../gen/google/rpc/error_details_pb.js";
import { Failure, type FailureKind } from "../../services/failure.js";

/** The exact text the contract prescribes for every invalid request (code 611). */
export const INVALID_REQUEST_MESSAGE = "the API request is invalid, improperly formed, or missing a required field";

/** The `domain` of the `google.rpc.ErrorInfo` detail attached to every error. */
export const ERROR_DOMAIN = "boardline";

export interface Row {
  readonly grpc: Code;
  readonly http: number;
  /** The documented `error.code`. */
  readonly code: number;
  /** The `ErrorInfo.reason`, UPPER_SNAKE_CASE as google.rpc prescribes. */
  readonly reason: string;
  /** The message when the failure carries no safe detail of its own. */
  readonly message: string;
  /** When it happens, in the OpenAPI document (`documentedJsonErrors`). */
  readonly when: string;
  /** Whether the answer may carry `Retry-After` (the failure's `retryAfterSeconds`). */
  readonly retryAfter?: true;
}

/** The rows, by failure kind. */
export const table: Readonly<Record<FailureKind, Row>> = {
  invalid: {
    grpc: Code.InvalidArgument,
    http: 400,
    code: 611,
    reason: "INVALID_REQUEST",
    message: INVALID_REQUEST_MESSAGE,
    when: "The body is not JSON, a field has the wrong type, or the request fails a validation rule (the message names the field when there is one).",
  },
  unauthenticated: {
    grpc: Code.Unauthenticated,
    http: 401,
    code: 401,
    reason: "UNAUTHENTICATED",
    message: "a valid Bearer token is required",
    when: "The Bearer token is missing, malformed, invalid or expired.",
  },
  permission_denied: {
    grpc: Code.PermissionDenied,
    http: 403,
    code: 403,
    reason: "PERMISSION_DENIED",
    message: "permission denied",
    when: "The caller may not do this (the operation's description says when).",
  },
  not_found: {
    grpc: Code.NotFound,
    http: 404,
    code: 404,
    reason: "NOT_FOUND",
    message: "not found",
    when: "What the request names is unknown, or of another project (the operation's description says what).",
  },
  rate_limited: {
    grpc: Code.ResourceExhausted,
    http: 429,
    code: 429,
    reason: "RATE_LIMITED",
    message: "too many requests, retry later",
    when: "Too many wrong passphrases from this caller, or too many watches open — on the instance (`MAX_WATCHES`) or of the caller's project (its share, `MAX_WATCHES_PER_PROJECT`) — or waiting to open: retry after `Retry-After` seconds; or more channels in one watch than `MAX_WATCH_CHANNELS` (no `Retry-After`: split them over several watches).",
    retryAfter: true,
  },
  queue_full: {
    grpc: Code.ResourceExhausted,
    http: 429,
    code: 429,
    reason: "CONVERSION_QUEUE_FULL",
    message: "the project's conversion queue is full, retry later",
    when: "ConvertFile: the project's conversion queue holds `CONVERSION_QUEUE_MAX` requests; retry after `Retry-After` seconds, the queue's expected wait.",
    retryAfter: true,
  },
  failed_precondition: {
    grpc: Code.FailedPrecondition,
    http: 409,
    code: 409,
    reason: "FAILED_PRECONDITION",
    message: "the request cannot be carried out in the resource's current state",
    when: "The resource's current state does not allow it (the operation's description says when).",
  },
  already_exists: {
    grpc: Code.AlreadyExists,
    http: 409,
    code: 409,
    reason: "ALREADY_EXISTS",
    message: "it already exists",
    when: "CreateChannel: the project already has a channel with this id.",
  },
  out_of_range: {
    grpc: Code.OutOfRange,
    http: 410,
    code: 410,
    reason: "OUT_OF_RANGE",
    message: "the events after this position are gone: take a new snapshot and watch from it",
    when: "A watch resumed from events that were trimmed away (WatchPstnEvents): take a new snapshot (GetPstnState) and watch from its `as_of_event_id`.",
  },
  idempotency_key_busy: {
    grpc: Code.Aborted,
    http: 409,
    code: 409,
    reason: "IDEMPOTENCY_KEY_IN_USE",
    message: "a request with this Idempotency-Key is still in progress, retry later",
    when: "ConvertFile with an `Idempotency-Key` that a call still in progress holds, or whose outcome is unknown (a time-out): retry after `Retry-After` seconds.",
    retryAfter: true,
  },
  idempotency_key_reused: {
    grpc: Code.FailedPrecondition,
    http: 422,
    code: 422,
    reason: "IDEMPOTENCY_KEY_REUSED",
    message: "this Idempotency-Key was used with a different request",
    when: "ConvertFile with an `Idempotency-Key` this caller used with a different request within `IDEMPOTENCY_TTL_HOURS`: use a new key for a new request.",
  },
  unavailable: {
    grpc: Code.Unavailable,
    http: 503,
    code: 503,
    reason: "UNAVAILABLE",
    message: "the service is temporarily unavailable, retry later",
    when: "Redis or the conversion backend is unavailable, a write did not reach `REDIS_MIN_REPLICAS` replicas in time, or the backend is busy (with `Retry-After`): the outcome is unknown, retry.",
    retryAfter: true,
  },
  deadline_exceeded: {
    grpc: Code.DeadlineExceeded,
    http: 504,
    code: 504,
    reason: "BACKEND_TIMEOUT",
    message: "the conversion backend did not answer in time",
    when: "The conversion backend did not answer in time.",
  },
  internal: {
    grpc: Code.Internal,
    http: 500,
    code: 500,
    reason: "INTERNAL",
    message: "internal server error",
    when: "A bug of boardline's, logged with the request id.",
  },
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

/** The `google.rpc.ErrorInfo` detail every RPC error carries: its reason, our domain, the documented code. */
export function errorInfoOf(p: PublicError): ErrorInfo {
  const metadata: Record<string, string> = { code: String(p.code) };
  if (p.retryAfterSeconds !== undefined) metadata["retry_after_seconds"] = String(p.retryAfterSeconds);
  return create(ErrorInfoSchema, { reason: p.reason, domain: ERROR_DOMAIN, metadata });
}

/** The `ConnectError` for Connect, gRPC and gRPC-Web callers, with an `ErrorInfo` detail. */
export function toConnectError(e: unknown): ConnectError {
  const p = publicError(e);
  return new ConnectError(p.message, p.grpc, undefined, [{ desc: ErrorInfoSchema, value: errorInfoOf(p) }]);
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

export type TransportRow<F extends TransportFailure> = {
  readonly http: number;
  readonly code: number;
  message(f: F): string;
  readonly when: string;
};

/** The rows of the transport failures, by kind. */
export const transportTable: {
  readonly [K in TransportFailure["kind"]]: TransportRow<Extract<TransportFailure, { kind: K }>>;
} = {
  no_route: { http: 404, code: 404, message: () => "no such route", when: "No route has this path." },
  method_not_allowed: {
    http: 405,
    code: 405,
    message: (f) => `method not allowed; use ${f.allow.join(" or ")}`,
    when: "The path is known, with another method (`Allow` names it).",
  },
  body_too_large: {
    http: 413,
    code: 611,
    message: (f) => `${INVALID_REQUEST_MESSAGE}: body exceeds ${f.limit} bytes`,
    when: "The body is longer than the server's limit (`MAX_BODY_BYTES`).",
  },
  unsupported_media_type: {
    http: 415,
    code: 611,
    message: () => `${INVALID_REQUEST_MESSAGE}: Content-Type must be application/json`,
    when: "The `Content-Type` is not `application/json`.",
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

/**
 * The gRPC status a call counts as (`abandon`) when its transport answered it
 * without running it: a transport failure, or "gone" for a client that went
 * away before its body was read.
 */
export function unrunStatus(f: TransportFailure | "gone"): Code {
  if (f === "gone") return Code.Canceled;
  return f.kind === "body_too_large" || f.kind === "unsupported_media_type" ? Code.InvalidArgument : Code.Unknown;
}

/**
 * The status line of an HTTP/1.1 request the parser refused before it became a
 * request (client-error.ts): there is no call and no route yet, so the answer is
 * Node's own — the status line, no body — and the connection closes.
 */
export function parserRefusalStatus(errorCode: string | undefined): string {
  if (errorCode === "HPE_HEADER_OVERFLOW") return "431 Request Header Fields Too Large";
  if (errorCode === "ERR_HTTP_REQUEST_TIMEOUT") return "408 Request Timeout";
  return "400 Bad Request";
}
