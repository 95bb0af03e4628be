/**
 * Failures the business layer and its adapters raise. They carry a kind, never a
 * transport status: `src/server/call/error-table.ts` is the one place that maps a kind
 * to a gRPC code, an HTTP status and the documented numeric `error.code`.
 *
 * `detail` is safe to show to the caller (for `invalid` it names the offending
 * field). `cause` is for the logs only and never leaves the process.
 */
export type FailureKind =
  | "invalid" // 611: malformed or invalid request
  | "unauthenticated" // 401
  | "permission_denied" // 403
  | "not_found" // 404
  | "rate_limited" // 429
  | "queue_full" // 429: the project's conversion queue holds CONVERSION_QUEUE_MAX requests
  | "failed_precondition" // 409: not possible in the resource's current state (e.g. cancelling a legacy conversion)
  | "already_exists" // 409 (gRPC ALREADY_EXISTS): what the request would create exists (CreateChannel)
  | "out_of_range" // 410: a watch resumed from events that are gone (trimmed away)
  | "idempotency_key_busy" // 409 (gRPC ABORTED): a call with this Idempotency-Key is in progress, or its outcome is unknown
  | "idempotency_key_reused" // 422 (gRPC FAILED_PRECONDITION): this Idempotency-Key came with another request
  | "unavailable" // 503: Redis or the conversion backend is down
  | "deadline_exceeded" // 504: the conversion backend timed out
  | "internal"; // 500

export class Failure extends Error {
  override readonly name = "Failure";
  readonly kind: FailureKind;
  readonly detail: string | undefined;
  /**
   * Seconds the caller should wait before trying again (`rate_limited`;
   * `unavailable` when the backend is busy; `idempotency_key_busy`).
   */
  readonly retryAfterSeconds: number | undefined;

  constructor(kind: FailureKind, options: { detail?: string; cause?: unknown; retryAfterSeconds?: number } = {}) {
    super(options.detail ?? kind, options.cause === undefined ? undefined : { cause: options.cause });
    this.kind = kind;
    this.detail = options.detail;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

export function isFailure(e: unknown): e is Failure {
  return e instanceof Failure;
}
