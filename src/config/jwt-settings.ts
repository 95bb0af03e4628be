/**
 * The JWT part of the configuration: the key source (exactly one of
 * JWT_SECRET, JWT_JWKS_URL, JWT_JWKS_FILE), the algorithms, which must fit
 * that key source, and what a token must carry (an issuer and an audience
 * with a JWKS; a `typ` of JWT_TYPES when set).
 */
import { readFileSync } from "node:fs";
import { ConfigError, type Env, isSet, readHttpUrl, readInteger, readList, readText } from "./read-variable.js";
import { HMAC_ALGORITHMS } from "./accepted-values.js";

export type JwtKeyConfig =
  | { readonly kind: "secret"; readonly secret: Uint8Array }
  | { readonly kind: "jwks-url"; readonly url: URL }
  | { readonly kind: "jwks-file"; readonly path: string };

export interface JwtSettings {
  /** Undefined only in demo mode, where a random secret is made at start-up. */
  readonly key: JwtKeyConfig | undefined;
  readonly algorithms: readonly string[];
  readonly issuer: string | undefined;
  readonly audience: string | undefined;
  /** JWT_TYPES: the `typ` headers a token may carry; undefined: any, or none. */
  readonly types: readonly string[] | undefined;
  readonly projectClaim: string;
  readonly scopeClaim: string;
  /** How long a verification is remembered at most (JWT_CACHE_MAX_MS); 0 = not at all. */
  readonly cacheMaxMs: number;
}

export const KEY_SOURCES = ["JWT_SECRET", "JWT_JWKS_URL", "JWT_JWKS_FILE"] as const;

/** `keyRequired` is false only in demo mode. */
export function loadJwtSettings(env: Env, keyRequired: boolean): JwtSettings {
  const key = readKeySource(env);
  if (key === undefined && keyRequired) {
    throw new ConfigError(
      "JWT_SECRET",
      "(or JWT_JWKS_URL / JWT_JWKS_FILE) is required outside demo mode (demo mode is no Redis and no JWT keys at all)",
    );
  }
  const claims = readClaims(env);
  if (key !== undefined && key.kind !== "secret") requireIssuerAndAudience(claims, key);
  return {
    key,
    algorithms: readAlgorithms(env, key),
    ...claims,
    cacheMaxMs: readInteger(env, "JWT_CACHE_MAX_MS"),
  };
}

/**
 * A JWKS is an identity provider's, which signs tokens for other applications
 * with the same keys: without an issuer and an audience to check, any of those
 * tokens carrying a project claim would be taken as meant for boardline. A
 * JWT_SECRET is boardline's own, and signs only its tokens.
 */
function requireIssuerAndAudience(claims: Pick<JwtSettings, "issuer" | "audience">, key: JwtKeyConfig): void {
  const source = key.kind === "jwks-url" ? "JWT_JWKS_URL" : "JWT_JWKS_FILE";
  const why = "a shared identity provider mints tokens for other applications too";
  if (claims.issuer === undefined && claims.audience === undefined) {
    throw new ConfigError("JWT_ISSUER", `and JWT_AUDIENCE are required with ${source}: ${why}`);
  }
  if (claims.issuer === undefined) {
    throw new ConfigError("JWT_ISSUER", `is required with ${source}, as is JWT_AUDIENCE: ${why}`);
  }
  if (claims.audience === undefined) {
    throw new ConfigError("JWT_AUDIENCE", `is required with ${source}, as is JWT_ISSUER: ${why}`);
  }
}

/** What a token must carry to pass the server's checks, and the HS256 secret when JWT_SECRET is set. */
export interface TokenSettings {
  readonly secret: Uint8Array | undefined;
  readonly issuer: string | undefined;
  readonly audience: string | undefined;
  /** The first is the `typ` token mint writes. */
  readonly types: readonly string[] | undefined;
  readonly projectClaim: string;
  readonly scopeClaim: string;
}

/** For the operator CLI, which mints tokens with JWT_SECRET (and ignores any JWKS). */
export function loadTokenSettings(env: Env = process.env): TokenSettings {
  return { secret: readSecret(env), ...readClaims(env) };
}

function readClaims(env: Env): Pick<JwtSettings, "issuer" | "audience" | "types" | "projectClaim" | "scopeClaim"> {
  return {
    issuer: readText(env, "JWT_ISSUER"),
    audience: readText(env, "JWT_AUDIENCE"),
    types: readList(env, "JWT_TYPES"),
    projectClaim: readText(env, "JWT_PROJECT_CLAIM"),
    scopeClaim: readText(env, "JWT_SCOPE_CLAIM"),
  };
}

function readSecret(env: Env): Uint8Array | undefined {
  const secret = readText(env, "JWT_SECRET");
  return secret === undefined ? undefined : new TextEncoder().encode(secret);
}

/** At most one key source may be set. */
function readKeySource(env: Env): JwtKeyConfig | undefined {
  const [first, second] = KEY_SOURCES.filter((name) => isSet(env, name));
  if (first !== undefined && second !== undefined) {
    throw new ConfigError(second, `cannot be combined with ${first}: set one of ${KEY_SOURCES.join(", ")}`);
  }
  const secret = readSecret(env);
  if (secret !== undefined) return { kind: "secret", secret };
  const url = readHttpUrl(env, "JWT_JWKS_URL");
  if (url !== undefined) return { kind: "jwks-url", url: new URL(url) };
  const path = readText(env, "JWT_JWKS_FILE");
  if (path !== undefined) return { kind: "jwks-file", path: checkJwksFile(path) };
  return undefined;
}

function checkJwksFile(path: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (e) {
    throw new ConfigError("JWT_JWKS_FILE", `cannot be read as JSON (${(e as Error).message.split("\n")[0]})`);
  }
  if (typeof parsed !== "object" || parsed === null || !Array.isArray((parsed as { keys?: unknown }).keys)) {
    throw new ConfigError("JWT_JWKS_FILE", 'must hold a JSON Web Key Set ({"keys": [...]})');
  }
  return path;
}

/**
 * JWT_ALGORITHMS, or by default HS256 for a secret (and in demo mode) and
 * RS256, ES256, EdDSA for a JWKS. A secret takes only HS*, a JWKS only the others.
 */
function readAlgorithms(env: Env, key: JwtKeyConfig | undefined): string[] {
  const secretKey = key === undefined || key.kind === "secret";
  const algorithms = readList(env, "JWT_ALGORITHMS") ?? (secretKey ? ["HS256"] : ["RS256", "ES256", "EdDSA"]);
  if (key === undefined) return algorithms;
  for (const a of algorithms) {
    if (HMAC_ALGORITHMS.includes(a) !== secretKey) {
      throw new ConfigError(
        "JWT_ALGORITHMS",
        `"${a}" does not fit the key: ${secretKey ? "JWT_SECRET takes HS256/HS384/HS512" : "a JWKS takes RS*, PS*, ES* or EdDSA"}`,
      );
    }
  }
  return algorithms;
}
