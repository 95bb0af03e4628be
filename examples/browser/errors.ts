/**
 * What a page does with each error of a call, as docs/errors.md, "What a
 * caller does with each error", says: give up with a readable reason, or
 * wait (as told, or with back-off) and try the same call again. Shared by
 * the example page (main.ts) and the moderation panel (panel.ts).
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { ErrorInfoSchema } from "./gen/google/rpc/error_details_pb.js";

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
export const jitter = (ms: number) => Math.round(ms * (0.8 + Math.random() * 0.4));

/** `retry_after_seconds` from the error's google.rpc.ErrorInfo detail, if it has one. */
function retryAfterSeconds(err: ConnectError): number | undefined {
  const info = err.findDetails(ErrorInfoSchema).find((i) => i.domain === "boardline");
  const seconds = Number(info?.metadata.retry_after_seconds);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
}

/** The error of a call; a connection that failed or dropped (fetch's TypeError) counts as UNAVAILABLE. */
export function callError(e: unknown): ConnectError {
  const err = ConnectError.from(e);
  if (err.code !== Code.Unknown || !(e instanceof TypeError || err.cause instanceof TypeError)) return err;
  return new ConnectError(`the connection failed: ${err.rawMessage}`, Code.Unavailable, undefined, undefined, e);
}

/** How long to wait before trying again, or why not to (docs/errors.md: "What a caller does with each error"). */
export function nextTry(err: ConnectError, attempt: number): { waitMs: number; why: string } | { giveUp: string } {
  const code = Code[err.code].replace(/(?<=[a-z])(?=[A-Z])/g, "_").toUpperCase(); // ResourceExhausted → RESOURCE_EXHAUSTED
  switch (err.code) {
    case Code.Unauthenticated:
      return { giveUp: `${code}: the token was refused (${err.rawMessage}); get a fresh token` };
    case Code.PermissionDenied:
      return { giveUp: `${code}: not allowed (${err.rawMessage}); check the passphrase or the token's scope` };
    // Too many tries, or (ABORTED) a ConvertFile's Idempotency-Key still at work: wait as told, same request.
    case Code.ResourceExhausted:
    case Code.Aborted: {
      const seconds = retryAfterSeconds(err);
      if (seconds === undefined) return { giveUp: `${code}: ${err.rawMessage}; the request is too big` };
      const waitMs = seconds * 1000 + Math.round(Math.random() * 250);
      return { waitMs, why: `${code}: ${err.rawMessage}; waiting ${seconds} s (retry_after_seconds) then again` };
    }
    case Code.Unavailable:
    case Code.DeadlineExceeded: {
      if (attempt >= 10) return { giveUp: `${code}: still unavailable after ${attempt + 1} tries (${err.rawMessage})` };
      const waitMs = jitter(Math.min(5000, 100 * 2 ** attempt));
      return { waitMs, why: `${code}: unavailable (${err.rawMessage}); trying again in ${waitMs} ms` };
    }
    default:
      return { giveUp: `${code}: ${err.rawMessage}; the request must change` };
  }
}
