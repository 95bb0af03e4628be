/**
 * Netless SDK tokens, signed the way the public reference implementation
 * (github.com/netless-io/netless-token, Node/JavaScript) signs them, so a token
 * made here for fixed inputs is byte-for-byte the token the reference makes:
 *
 *   fields  = { ak, nonce, role, expireAt? }      every value a string
 *   sig     = hex(HMAC-SHA256(secretKey, JSON.stringify(fields, keys sorted)))
 *   query   = key=value pairs of fields + sig, keys sorted, encodeURIComponent'd, joined by "&"
 *   token   = "NETLESSSDK_" + base64url(query) without "=" padding
 *
 * `role` is the reference's numeric role turned into a string ("0" admin,
 * "1" writer, "2" reader: the smaller, the more powerful). `expireAt` is a
 * millisecond timestamp, also a string, and is left out when the lifespan is 0
 * (the token never expires).
 *
 * The verifier exists for the conversion simulator; the real backend does the
 * same checks on its side.
 */
import { createHmac, randomUUID, timingSafeEqual } from "node:crypto";

export const SDK_TOKEN_PREFIX = "NETLESSSDK_";

export type TokenRole = "admin" | "writer" | "reader";

/** The reference encodes roles as numbers, which end up as these strings. */
const ROLE_CODES: Readonly<Record<TokenRole, string>> = { admin: "0", writer: "1", reader: "2" };
const ROLES_BY_CODE: ReadonlyMap<string, TokenRole> = new Map(
  Object.entries(ROLE_CODES).map(([role, code]) => [code, role as TokenRole]),
);

export interface SdkTokenOptions {
  readonly accessKey: string;
  readonly secretKey: string;
  /** Default `writer`: enough to start conversions, no more. */
  readonly role?: TokenRole;
  /** How long the token is valid. 0 or absent: it never expires (as in the reference). */
  readonly lifespanMs?: number;
  /** Milliseconds since the epoch; for tests. Default `Date.now()`. */
  readonly now?: number;
  /** For tests; default a random UUID. The backend treats it as opaque. */
  readonly nonce?: string;
}

export interface VerifiedSdkToken {
  readonly ak: string;
  readonly role: TokenRole;
  /** Milliseconds since the epoch; absent when the token never expires. */
  readonly expireAt?: number;
}

export type InvalidTokenReason = "malformed" | "unknown_key" | "bad_signature" | "expired";

/** Thrown by `verifySdkToken`; the message never contains the token. */
export class InvalidSdkTokenError extends Error {
  override readonly name = "InvalidSdkTokenError";
  readonly reason: InvalidTokenReason;

  constructor(reason: InvalidTokenReason, message: string) {
    super(message);
    this.reason = reason;
  }
}

export function createSdkToken(options: SdkTokenOptions): string {
  const lifespanMs = options.lifespanMs ?? 0;
  if (!Number.isSafeInteger(lifespanMs) || lifespanMs < 0) {
    // The reference silently treats a negative lifespan as "never expires";
    // refusing it is safer than handing out an eternal writer token by mistake.
    throw new RangeError("lifespanMs must be a non-negative integer");
  }
  // The reference uses a v1 UUID; a v4 is as unique and does not embed a MAC address.
  const fields: Record<string, string> = {
    ak: options.accessKey,
    nonce: options.nonce ?? randomUUID(),
    role: ROLE_CODES[options.role ?? "writer"],
  };
  if (lifespanMs > 0) {
    fields.expireAt = String((options.now ?? Date.now()) + lifespanMs);
  }
  const signed = { ...fields, sig: sign(fields, options.secretKey) };
  return SDK_TOKEN_PREFIX + Buffer.from(toQueryString(signed), "utf8").toString("base64url");
}

/**
 * Checks a `NETLESSSDK_` token: well formed, signed with the secret key of its
 * `ak`, not expired at `now`. Returns its claims or throws `InvalidSdkTokenError`.
 */
export function verifySdkToken(
  token: string,
  lookupSecret: (accessKey: string) => string | undefined,
  now: number = Date.now(),
): VerifiedSdkToken {
  const fields = parseToken(token);
  const { sig, ...unsigned } = fields;
  const ak = unsigned.ak;
  const roleCode = unsigned.role;
  const role = roleCode === undefined ? undefined : ROLES_BY_CODE.get(roleCode);
  if (sig === undefined || ak === undefined || unsigned.nonce === undefined || role === undefined) {
    throw new InvalidSdkTokenError("malformed", "the token lacks a required field");
  }
  const secret = lookupSecret(ak);
  if (secret === undefined) {
    throw new InvalidSdkTokenError("unknown_key", "the token's access key is unknown");
  }
  if (!sameText(sig, sign(unsigned, secret))) {
    throw new InvalidSdkTokenError("bad_signature", "the token's signature does not match");
  }
  const expireAtText = unsigned.expireAt;
  if (expireAtText === undefined) {
    return { ak, role };
  }
  const expireAt = /^\d{1,16}$/.test(expireAtText) ? Number(expireAtText) : Number.NaN;
  if (!Number.isSafeInteger(expireAt)) {
    throw new InvalidSdkTokenError("malformed", "the token's expireAt is not a timestamp");
  }
  if (expireAt <= now) {
    throw new InvalidSdkTokenError("expired", "the token has expired");
  }
  return { ak, role, expireAt };
}

const KNOWN_FIELDS = new Set(["ak", "nonce", "role", "expireAt", "sig"]);

function parseToken(token: string): Record<string, string> {
  if (!token.startsWith(SDK_TOKEN_PREFIX)) {
    throw new InvalidSdkTokenError("malformed", "not an SDK token");
  }
  const encoded = token.slice(SDK_TOKEN_PREFIX.length);
  // Buffer's base64url decoder skips characters outside the alphabet; insist on
  // a clean alphabet so two different strings never verify as one token.
  if (!/^[A-Za-z0-9_-]+$/.test(encoded)) {
    throw new InvalidSdkTokenError("malformed", "the token is not base64url");
  }
  const fields: Record<string, string> = {};
  for (const pair of Buffer.from(encoded, "base64url").toString("utf8").split("&")) {
    const eq = pair.indexOf("=");
    const key = eq < 0 ? undefined : decodeComponent(pair.slice(0, eq));
    if (key === undefined || !KNOWN_FIELDS.has(key) || Object.hasOwn(fields, key)) {
      throw new InvalidSdkTokenError("malformed", "the token has an unexpected field");
    }
    fields[key] = decodeComponent(pair.slice(eq + 1));
  }
  return fields;
}

function decodeComponent(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new InvalidSdkTokenError("malformed", "the token has a bad percent-encoding");
  }
}

/** HMAC over the JSON of the fields with sorted keys, as the reference does. */
function sign(fields: Readonly<Record<string, string>>, secretKey: string): string {
  return createHmac("sha256", secretKey)
    .update(JSON.stringify(sortKeys(fields)))
    .digest("hex");
}

function toQueryString(fields: Readonly<Record<string, string>>): string {
  return Object.entries(sortKeys(fields))
    .map(([key, value]) => `${encodeURIComponent(key)}=${encodeURIComponent(value)}`)
    .join("&");
}

/**
 * A copy whose own keys are in `Array.prototype.sort` order (UTF-16 code units),
 * the order the reference uses. Our keys are never integer-like, so JavaScript
 * keeps insertion order.
 */
function sortKeys(fields: Readonly<Record<string, string>>): Record<string, string> {
  const sorted: Record<string, string> = {};
  for (const key of Object.keys(fields).sort()) {
    sorted[key] = fields[key] as string;
  }
  return sorted;
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a, "utf8");
  const right = Buffer.from(b, "utf8");
  return left.length === right.length && timingSafeEqual(left, right);
}
