/**
 * The idempotency record (docs/redis-schema.md), shared by
 * both stores: a hash `state` (`pending`, `unknown`, `done`), `fingerprint`
 * (sha256 hex of the request), `owner` (the call holding a `pending` or
 * `unknown` record), `answer` (`done` only: the answer as the domain encoded
 * it) and `created_at` (ms). Only boardline writes these; a record it cannot
 * read counts as none, and is replaced by the next claim (the Redis script
 * applies the same rule, in Lua).
 */
import type { ClaimRequest, IdempotencyClaim, IdempotencyState } from "../../services/ports.js";
import type { Fields } from "./channel-records.js";

/** The record of a new claim. */
export function pendingFields(request: ClaimRequest): Fields {
  return { state: "pending", fingerprint: request.fingerprint, owner: request.owner, created_at: String(request.at) };
}

/** The record of a completed call (no owner: nobody holds a done key). */
export function doneFields(request: Omit<ClaimRequest, "lockMs">, answer: string): Fields {
  return { state: "done", fingerprint: request.fingerprint, answer, created_at: String(request.at) };
}

/** What a claim finds in an existing record; undefined when it is not a record boardline wrote (a claim replaces it). */
export function existingClaim(fields: Fields, expiresInMs: number): IdempotencyClaim | undefined {
  const { state, fingerprint, answer } = fields;
  if (!isState(state) || !fingerprint) return undefined;
  if (state === "done") return answer === undefined ? undefined : { kind: "done", fingerprint, answer };
  return { kind: state, fingerprint, expiresInMs: Math.max(0, expiresInMs) };
}

/** Whether `owner` holds the record (a `pending` or `unknown` one). */
export function heldBy(fields: Fields, owner: string): boolean {
  return (fields.state === "pending" || fields.state === "unknown") && fields.owner === owner;
}

function isState(value: string | undefined): value is IdempotencyState {
  return value === "pending" || value === "unknown" || value === "done";
}
