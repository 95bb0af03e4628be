/**
 * The values variables.ts accepts where a plain kind cannot say it: the JWT
 * signature algorithms, where a JWKS may be fetched from (JWT_JWKS_URL), the
 * `typ` headers a token may carry (JWT_TYPES), a
 * browser origin (CORS_ORIGINS) and the public base URL given to the conversion
 * backend (CONVERSION_WEBHOOK_BASE).
 */
import { isLoopbackHost } from "../loopback.js";

/** The JWT signature algorithms boardline accepts, by the kind of key they need. */
export const HMAC_ALGORITHMS: readonly string[] = ["HS256", "HS384", "HS512"];

export const ASYMMETRIC_ALGORITHMS: readonly string[] = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
];

export const JWT_ALGORITHMS: readonly string[] = [...HMAC_ALGORITHMS, ...ASYMMETRIC_ALGORITHMS];

/**
 * The check of JWT_JWKS_URL: the key set it serves decides which tokens are
 * trusted, so it is fetched over https; plain http only from a loopback host
 * (the tests' and a local identity provider's), where nobody stands between.
 */
export function checkJwksUrl(url: URL): string | undefined {
  if (url.protocol === "https:" || isLoopbackHost(url.hostname)) return undefined;
  return "must be an https URL (http only for a loopback host: localhost, 127.0.0.0/8, [::1]): its keys decide which tokens are trusted, and over plain http anyone on the way could swap in keys of their own";
}

/** A media type's name (RFC 6838 §4.2), with or without its `type/`; no parameters. */
const MEDIA_TYPE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}(?:\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126})?$/;

/** Whether `value` can be a JWT's `typ` header (JWT_TYPES): `at+jwt`, `JWT`, `application/at+jwt`. */
export function isMediaType(value: string): boolean {
  return MEDIA_TYPE.test(value);
}

/** Whether `value` is a browser origin (`https://app.example.com`, a trailing slash tolerated): CORS_ORIGINS. */
export function isOrigin(value: string): boolean {
  try {
    return new URL(value).origin === value.replace(/\/$/, "");
  } catch {
    return false;
  }
}

/**
 * The check of CONVERSION_WEBHOOK_BASE: boardline's public base URL, which the
 * conversion backend is given inside every webhook URL. An absolute https URL
 * (plain http only for a loopback host, for the demo and the tests), without a
 * query or a fragment (the webhook path and its `sig` are appended) and without
 * credentials (the backend would store them). The value is never echoed: it
 * might hold what it must not. Returns what is wrong, or undefined.
 */
export function checkWebhookBase(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "must be an absolute https URL";
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && isLoopbackHost(url.hostname))) {
    return "must be an https URL (http only for a loopback host: localhost, 127.0.0.1, [::1])";
  }
  if (value.includes("?") || value.includes("#")) return "must not have a query or a fragment";
  if (url.username !== "" || url.password !== "") return "must not carry a user name or password";
  return undefined;
}
