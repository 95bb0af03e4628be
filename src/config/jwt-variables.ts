/**
 * The JWT rows of the configuration table (variables.ts, where they take their
 * place after the Redis rows): the key source, the algorithms, and what a token
 * must carry (its issuer, audience and `typ`). Kept apart only for the size of variables.ts; the same rules
 * apply (see there), and the rules that tie them together are in jwt-settings.ts.
 */
import { checkJwksUrl, isMediaType, JWT_ALGORITHMS } from "./accepted-values.js";
import type { Variable } from "./variable-kinds.js";

export const JWT_VARIABLES = {
  JWT_SECRET: {
    kind: "text",
    secret: true,
    defaultNote: "— (random in demo mode)",
    allowed: "at least 32 bytes",
    untrimmed: true,
    check: (v) => (new TextEncoder().encode(v).length < 32 ? "must be at least 32 bytes" : undefined),
    meaning:
      "HS256/384/512 secret. One of the three key sources (with `JWT_JWKS_URL`, `JWT_JWKS_FILE`): set exactly one outside demo mode",
  },
  JWT_JWKS_URL: {
    kind: "http-url",
    allowed: "an `https://` URL (`http://` only for a loopback host: `localhost`, `127.0.0.0/8`, `[::1]`)",
    check: checkJwksUrl,
    meaning: "a remote JWKS (fetched and cached by jose); a key source",
  },
  JWT_JWKS_FILE: {
    kind: "file",
    allowed: 'a JSON file holding a JSON Web Key Set (`{"keys": [...]}`)',
    meaning: "a JWKS in a file; a key source",
  },
  JWT_ALGORITHMS: {
    kind: "list",
    defaultNote: "`HS256` with `JWT_SECRET`, `RS256,ES256,EdDSA` with a JWKS",
    allowed: "comma-separated: `HS256`, `HS384`, `HS512` with `JWT_SECRET`; `RS*`, `PS*`, `ES*`, `EdDSA` with a JWKS",
    check: (a) =>
      JWT_ALGORITHMS.includes(a)
        ? undefined
        : `has an unsupported algorithm "${a}" (allowed: ${JWT_ALGORITHMS.join(", ")})`,
    meaning: "allow-list; must fit the key source",
  },
  JWT_ISSUER: {
    kind: "text",
    allowed: "any text",
    meaning:
      "the `iss` a token must carry: required with a JWKS (`JWT_JWKS_URL`, `JWT_JWKS_FILE`), whose identity provider signs tokens for other applications too; with `JWT_SECRET`, checked when set",
  },
  JWT_AUDIENCE: {
    kind: "text",
    allowed: "any text",
    meaning:
      "the `aud` a token must carry: required with a JWKS (`JWT_JWKS_URL`, `JWT_JWKS_FILE`), whose identity provider signs tokens for other applications too; with `JWT_SECRET`, checked when set",
  },
  JWT_TYPES: {
    kind: "list",
    defaultNote: "— (any `typ`, or none)",
    allowed: "comma-separated media types: `at+jwt`, `JWT`, `application/at+jwt`…",
    check: (t) => (isMediaType(t) ? undefined : `is not a media type like at+jwt or JWT (got "${t}")`),
    meaning:
      "the `typ` headers a token may carry (RFC 8725 §3.11), e.g. `at+jwt` for RFC 9068 access tokens, so that another kind of JWT from the same identity provider (an ID token, a logout token…) is not taken for an access token: a token with another `typ`, or none, is refused (401). Compared as RFC 7515 compares media types: without regard to case, `application/` optional. `boardline token mint` writes the first",
  },
  JWT_PROJECT_CLAIM: {
    kind: "text",
    default: "project_id",
    allowed: "a claim name",
    meaning: "claim naming the caller's project",
  },
  JWT_SCOPE_CLAIM: {
    kind: "text",
    default: "scope",
    allowed: "a claim name",
    meaning:
      "claim holding the token's scopes (space-separated, as RFC 9068's `scope`, or a JSON array); `pstn.gateway` lets a service read and watch its project's channels by channel id",
  },
  JWT_CACHE_MAX_MS: {
    kind: "integer",
    default: 60_000,
    min: 0,
    max: 3_600_000,
    meaning:
      "how long a verified token is remembered at most (and never past its `exp`): a token whose JWKS key is withdrawn is refused within this bound plus the 10 min a fetched `JWT_JWKS_URL` key set is reused; `0` = verify every call",
  },
} as const satisfies Record<string, Variable>;
