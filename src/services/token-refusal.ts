/**
 * Why a caller's token was refused, as a small fixed set (the metrics count
 * refusals by it): the authenticator, and the services that need a scope,
 * give their `Failure` a `TokenRefused` cause that says which.
 */
import { Failure } from "./failure.js";

export const TOKEN_REFUSAL_REASONS = [
  "expired",
  "bad_signature",
  "wrong_audience",
  "missing_scope",
  "malformed",
  "other",
] as const;
export type TokenRefusalReason = (typeof TOKEN_REFUSAL_REASONS)[number];

/** The cause of a token's refusal: why, and the verifier's own error (for the logs) when there was one. */
export class TokenRefused extends Error {
  override readonly name = "TokenRefused";

  constructor(
    readonly reason: TokenRefusalReason,
    options: { cause?: unknown } = {},
  ) {
    super(`token refused: ${reason}`, options);
  }
}

/** Why a call's failure refused its token; undefined when the failure was not a token's refusal. */
export function tokenRefusal(e: unknown): TokenRefusalReason | undefined {
  if (!(e instanceof Failure) || !(e.cause instanceof TokenRefused)) return undefined;
  return e.kind === "unauthenticated" || e.kind === "permission_denied" ? e.cause.reason : undefined;
}
