/**
 * The store's part of safe retries (docs/architecture.md, "Safe retries"): one
 * record per caller and Idempotency-Key, taken with SET NX PX semantics in one
 * step, then either completed with the answer, marked "outcome unknown", or
 * released. Every write names the call that holds the record (`owner`), so a
 * call whose lock ran out never overwrites the call that took the key after it.
 * src/services/ports.ts re-exports all of it.
 */

/** Whose key it is: a key is the caller's own (project and token subject). */
export interface IdempotencyScope {
  readonly project: string;
  readonly subject: string;
  /** The Idempotency-Key, as checked by `parseIdempotencyKey`. */
  readonly key: string;
}

/**
 * Where a key stands: `pending` — a call holds it and is working; `unknown` —
 * the call that held it ended without knowing whether the backend did the work
 * (the lock stays until it expires); `done` — the answer is stored.
 */
export type IdempotencyState = "pending" | "unknown" | "done";

/** What `claim` found. */
export type IdempotencyClaim =
  /** The key was free: it is now `pending`, held by the caller's `owner` for `lockMs`. */
  | { readonly kind: "claimed" }
  /** Another call holds the key, or held it and its outcome is unknown; free again in `expiresInMs`. */
  | {
      readonly kind: "pending" | "unknown";
      readonly fingerprint: string;
      readonly expiresInMs: number;
    }
  /** The key's call is done: its answer (opaque text, as given to `complete`). */
  | { readonly kind: "done"; readonly fingerprint: string; readonly answer: string };

export interface ClaimRequest {
  /** A fresh id of the calling call: only it may complete, mark or release what it claimed. */
  readonly owner: string;
  /** The request's fingerprint (sha256 hex of the validated request). */
  readonly fingerprint: string;
  /** How long the claim holds the key unless completed or released. */
  readonly lockMs: number;
  /** Milliseconds since the epoch (the record's `created_at`). */
  readonly at: number;
}

export interface IdempotencyStore {
  /**
   * In one step: the key's record when there is one; else a new `pending`
   * record held by `owner` that expires after `lockMs`. A record that is not
   * one boardline wrote (wrong type, unknown state) counts as none.
   */
  claim(scope: IdempotencyScope, request: ClaimRequest): Promise<IdempotencyClaim>;
  /**
   * Stores the answer (`done`), kept for the store's idempotency TTL
   * (IDEMPOTENCY_TTL_HOURS), when `owner` still holds the key or nobody does
   * (the lock ran out and no other call took the key). False, and nothing
   * written, when another call holds it now.
   */
  complete(scope: IdempotencyScope, request: Omit<ClaimRequest, "lockMs">, answer: string): Promise<boolean>;
  /** Marks the key `unknown` and holds it `lockMs` from now, when `owner` still holds it. */
  markUnknown(scope: IdempotencyScope, owner: string, lockMs: number): Promise<boolean>;
  /** Deletes a `pending` or `unknown` record held by `owner`: the key is free again. */
  release(scope: IdempotencyScope, owner: string): Promise<boolean>;
}
