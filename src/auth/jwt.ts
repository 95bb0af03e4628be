/**
 * Bearer JWT verification with jose: an explicit algorithm allow-list, `exp`
 * required, optional issuer and audience, an optional `typ` allow-list, a
 * small clock tolerance, and the caller's project and scopes taken from
 * configurable claims (a project the Redis key schema cannot hold is refused).
 * jose never follows `jku` or `x5u` headers, and a key is only ever used with
 * the algorithms allowed.
 */
import { readFileSync } from "node:fs";
import {
  type JWTVerifyGetKey,
  type JWTVerifyOptions,
  type JWTVerifyResult,
  createLocalJWKSet,
  createRemoteJWKSet,
  jwtVerify,
  SignJWT,
} from "jose";
import { Failure } from "../services/failure.js";
import { TokenRefused, type TokenRefusalReason } from "../services/token-refusal.js";
import type { Authenticator, Caller } from "../services/ports.js";
import { checkProjectId } from "../store/schema/keys.js";
import { TtlCache } from "../ttl-cache.js";

export type JwtKeySource =
  | { readonly kind: "secret"; readonly secret: Uint8Array }
  | { readonly kind: "jwks-url"; readonly url: URL }
  | { readonly kind: "jwks-file"; readonly path: string };

export interface JwtOptions {
  readonly key: JwtKeySource;
  readonly algorithms: readonly string[];
  readonly issuer?: string;
  readonly audience?: string;
  /**
   * The `typ` headers a token may carry (JWT_TYPES), compared as media types:
   * without regard to case, `application/` optional. Undefined: any, or none.
   */
  readonly types?: readonly string[];
  /** Claim that names the caller's project. */
  readonly projectClaim: string;
  /** Claim that holds the token's scopes (default `scope`). */
  readonly scopeClaim?: string;
  readonly clockToleranceSeconds?: number;
  /**
   * How long a verification is remembered at most (JWT_CACHE_MAX_MS; default
   * 60 s; 0 = every call is verified): a token whose JWKS key is withdrawn is
   * refused once this has passed and jose has fetched the JWKS again.
   */
  readonly cacheMaxMs?: number;
}

/** Longer headers are refused before any parsing: no real token is this big. */
export const MAX_TOKEN_LENGTH = 8192;
/**
 * Verified tokens remembered (until their `exp`, at most `cacheMaxMs`), so a
 * client reusing its token skips the crypto; the least recently used goes first.
 */
export const VERIFIED_CACHE_SIZE = 10_000;
/** The default of JWT_CACHE_MAX_MS. */
export const DEFAULT_JWT_CACHE_MAX_MS = 60_000;
const BEARER = /^Bearer +([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*) *$/i;
const BEARER_SPACE = "Bearer ";

export class JwtAuthenticator implements Authenticator {
  private readonly key: Uint8Array | JWTVerifyGetKey;
  private readonly verifyOptions: JWTVerifyOptions;
  /** `types`, each as mediaType() gives it; undefined: any typ. */
  private readonly types: ReadonlySet<string> | undefined;
  /** token → caller; undefined when JWT_CACHE_MAX_MS is 0. Refusals are never cached. */
  private readonly verified: TtlCache<Caller> | undefined;

  constructor(private readonly options: JwtOptions) {
    this.key = loadKey(options.key);
    this.verifyOptions = {
      algorithms: [...options.algorithms],
      requiredClaims: ["exp"],
      clockTolerance: options.clockToleranceSeconds ?? 5,
      ...(options.issuer === undefined ? {} : { issuer: options.issuer }),
      ...(options.audience === undefined ? {} : { audience: options.audience }),
    };
    this.types = options.types === undefined ? undefined : new Set(options.types.map(mediaType));
    const cacheMaxMs = options.cacheMaxMs ?? DEFAULT_JWT_CACHE_MAX_MS;
    this.verified =
      cacheMaxMs > 0 ? new TtlCache({ ttlMs: cacheMaxMs, maxHits: VERIFIED_CACHE_SIZE, maxMisses: 0 }) : undefined;
  }

  async authenticate(authorization: string | undefined): Promise<Caller> {
    if (authorization === undefined || authorization === "") {
      throw refused("other", "missing Authorization: Bearer token");
    }
    // The usual header, `Bearer <a token verified before>`, is found without parsing it: a cached token
    // matched BEARER's token part, so that header matches BEARER, with that token.
    const usual = authorization.startsWith(BEARER_SPACE)
      ? this.verified?.get(authorization.slice(BEARER_SPACE.length))
      : undefined;
    if (usual?.value !== undefined) return usual.value;
    const match = authorization.length <= MAX_TOKEN_LENGTH ? BEARER.exec(authorization) : null;
    const token = match?.[1];
    if (token === undefined) {
      throw refused("malformed", "malformed Authorization header; expected Bearer <jwt>");
    }
    const hit = this.verified?.get(token)?.value;
    if (hit !== undefined) return hit;
    let result: JWTVerifyResult;
    try {
      // The overloads of jwtVerify differ only in the key type.
      result =
        this.key instanceof Uint8Array
          ? await jwtVerify(token, this.key, this.verifyOptions)
          : await jwtVerify(token, this.key, this.verifyOptions);
    } catch (e) {
      if (isKeySetUnavailable(e)) throw new Failure("unavailable", { cause: e });
      throw refused(verifierRefusal(e), "invalid or expired token", e);
    }
    this.checkType(result.protectedHeader.typ);
    const payload: Record<string, unknown> = result.payload;
    const project = payload[this.options.projectClaim];
    const subject = payload["sub"];
    if (typeof project !== "string" || project === "" || typeof subject !== "string" || subject === "") {
      throw refused("other", `token lacks the "${this.options.projectClaim}" or "sub" claim`);
    }
    // The project names Redis keys (`{<project>/<channel>}`, `{<project>}`): one the key schema
    // cannot hold would read and write another project's keys, so it is no project at all.
    const problem = checkProjectId(project);
    if (problem !== undefined) {
      throw refused("other", `the token's "${this.options.projectClaim}" claim is not a usable project id: ${problem}`);
    }
    const scopes = readScopes(payload[this.options.scopeClaim ?? "scope"]);
    if (scopes === undefined) {
      throw refused(
        "malformed",
        `the token's "${this.options.scopeClaim ?? "scope"}" claim must be a space-separated string or an array of strings`,
      );
    }
    const caller: Caller = { project, subject, scopes };
    this.remember(token, caller, payload["exp"]);
    return caller;
  }

  /**
   * jose's own `typ` option takes one type; JWT_TYPES may list several (an
   * identity provider moving from `JWT` to `at+jwt`), compared the way jose compares.
   */
  private checkType(typ: unknown): void {
    if (this.types === undefined) return;
    if (typeof typ !== "string" || !this.types.has(mediaType(typ))) {
      throw refused("other", `the token's "typ" header is not one of ${(this.options.types ?? []).join(", ")}`);
    }
  }

  /**
   * Remembers a verified token until its `exp` (no clock tolerance: a cached
   * token is never accepted later than a fresh verification would), and no
   * longer than `cacheMaxMs`, which bounds how long a withdrawn key's tokens
   * outlive it. Bounded in size: the least recently used entry goes.
   */
  private remember(token: string, caller: Caller, exp: unknown): void {
    if (typeof exp !== "number") return;
    this.verified?.set(token, caller, exp * 1000);
  }
}

/**
 * A `typ` as RFC 7515 §4.1.9 compares it: without regard to case, and
 * `application/` left out or not (`at+jwt` is `application/at+jwt`).
 */
function mediaType(typ: string): string {
  const lower = typ.toLowerCase();
  return lower.includes("/") ? lower : `application/${lower}`;
}

const NO_SCOPES: ReadonlySet<string> = new Set();

/**
 * A scope claim: absent → no scopes; a space-separated string (RFC 8693,
 * RFC 9068) or an array of strings (as some identity providers issue `scp`).
 * Undefined for anything else: a claim we cannot read is not silently ignored.
 */
function readScopes(claim: unknown): ReadonlySet<string> | undefined {
  if (claim === undefined) return NO_SCOPES;
  if (typeof claim === "string") return new Set(claim.split(" ").filter((s) => s !== ""));
  if (Array.isArray(claim) && claim.every((s): s is string => typeof s === "string")) {
    return new Set(claim.flatMap((s) => s.split(" ")).filter((s) => s !== ""));
  }
  return undefined;
}

function loadKey(source: JwtKeySource): Uint8Array | JWTVerifyGetKey {
  switch (source.kind) {
    case "secret":
      return source.secret;
    case "jwks-url":
      return createRemoteJWKSet(source.url, { timeoutDuration: 2000, cooldownDuration: 30_000, cacheMaxAge: 600_000 });
    case "jwks-file":
      return createLocalJWKSet(
        JSON.parse(readFileSync(source.path, "utf8")) as Parameters<typeof createLocalJWKSet>[0],
      );
  }
}

/** A refusal of the caller's token: 401, its reason the cause's (the metrics count refusals by it). */
function refused(reason: TokenRefusalReason, detail: string, cause?: unknown): Failure {
  return new Failure("unauthenticated", { detail, cause: new TokenRefused(reason, { cause }) });
}

/** Why jose refused a token, by its error's code. */
function verifierRefusal(e: unknown): TokenRefusalReason {
  const code = e instanceof Error && "code" in e ? e.code : undefined;
  if (code === "ERR_JWT_EXPIRED") return "expired";
  if (code === "ERR_JWS_SIGNATURE_VERIFICATION_FAILED" || code === "ERR_JWKS_NO_MATCHING_KEY") return "bad_signature";
  if (
    code === "ERR_JWT_CLAIM_VALIDATION_FAILED" &&
    "claim" in (e as object) &&
    (e as { claim: unknown }).claim === "aud"
  )
    return "wrong_audience";
  if (code === "ERR_JWS_INVALID" || code === "ERR_JWT_INVALID") return "malformed";
  return "other";
}

/** A remote JWKS that cannot be fetched is our outage, not the caller's fault. */
function isKeySetUnavailable(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return code === "ERR_JWKS_TIMEOUT" || (e instanceof Error && e.name === "TypeError" && /fetch/i.test(e.message));
}

export interface MintOptions {
  readonly secret: Uint8Array;
  readonly project: string;
  readonly subject: string;
  readonly ttlSeconds: number;
  readonly projectClaim?: string;
  /** Scopes to grant, written space-separated into `scopeClaim` (default `scope`); none: no claim. */
  readonly scopes?: readonly string[];
  readonly scopeClaim?: string;
  readonly issuer?: string;
  readonly audience?: string;
  /** The `typ` header (default `JWT`): the first of JWT_TYPES, for the server to take it. */
  readonly typ?: string;
}

/** Mints an HS256 token (demo, CLI and tests). */
export async function mintToken(o: MintOptions): Promise<string> {
  const claims: Record<string, string> = { [o.projectClaim ?? "project_id"]: o.project };
  if (o.scopes !== undefined && o.scopes.length > 0) claims[o.scopeClaim ?? "scope"] = o.scopes.join(" ");
  let jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: "HS256", typ: o.typ ?? "JWT" })
    .setSubject(o.subject)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + o.ttlSeconds);
  if (o.issuer !== undefined) jwt = jwt.setIssuer(o.issuer);
  if (o.audience !== undefined) jwt = jwt.setAudience(o.audience);
  return jwt.sign(o.secret);
}
