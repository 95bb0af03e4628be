/**
 * The Idempotency-Key as a caller sends it: the JSON routes' `Idempotency-Key`
 * header or the `idempotency-key` metadata of gRPC, gRPC-Web and Connect (the
 * transports hand its value over as it came). One rule for all of them, so a
 * retry over another protocol names the same key.
 */
import { Failure } from "../failure.js";

export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/** A Structured Field string (RFC 8941), as the IETF Idempotency-Key draft spells the header: `"…"`. */
const SF_STRING = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/;
const PRINTABLE_ASCII = /^[\x20-\x7e]+$/;

/**
 * The key: the value without the white space around it, and without the
 * quotes of the draft's `"…"` form (`"abc"` and `abc` are one key). 1–255
 * printable ASCII characters; anything else (empty, too long, a control or
 * non-ASCII character) is `Failure("invalid")`.
 */
export function parseIdempotencyKey(raw: string): string {
  let key = raw.replace(/^[ \t]+|[ \t]+$/g, "");
  const quoted = SF_STRING.exec(key);
  if (quoted !== null) key = (quoted[1] ?? "").replace(/\\(["\\])/g, "$1");
  if (key.length === 0) throw invalid("must not be empty");
  if (key.length > MAX_IDEMPOTENCY_KEY_LENGTH)
    throw invalid(`must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`);
  if (!PRINTABLE_ASCII.test(key)) throw invalid("must be printable ASCII, without control characters");
  return key;
}

function invalid(why: string): Failure {
  return new Failure("invalid", { detail: `idempotency-key: ${why}` });
}
