/**
 * All configuration, parsed and validated in one place, from the environment.
 * An invalid value stops start-up with one line naming the variable.
 */
import { readFileSync } from "node:fs";
import type { RedisConnectionOptions } from "./store/redis-connection.js";

export class ConfigError extends Error {
  override readonly name = "ConfigError";
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable} ${problem}`);
  }
}

export type RedisConfig = RedisConnectionOptions;

export type JwtKeyConfig =
  | { readonly kind: "secret"; readonly secret: Uint8Array }
  | { readonly kind: "jwks-url"; readonly url: URL }
  | { readonly kind: "jwks-file"; readonly path: string };

export interface Config {
  readonly production: boolean;
  /** No Redis and no JWT keys configured outside production: seeded demo with a simulator. */
  readonly demo: boolean;
  readonly host: string;
  readonly port: number;
  readonly redis: RedisConfig | undefined;
  readonly redisKeyPrefix: string;
  readonly redisCommandTimeoutMs: number;
  readonly jwt: {
    /** Undefined only in demo mode, where a random secret is made at start-up. */
    readonly key: JwtKeyConfig | undefined;
    readonly algorithms: readonly string[];
    readonly issuer: string | undefined;
    readonly audience: string | undefined;
    readonly projectClaim: string;
  };
  /** Undefined in demo mode without CONVERSION_API_BASE: the bundled simulator is used. */
  readonly conversionApiBase: string | undefined;
  readonly conversionTimeoutMs: number;
  readonly corsOrigins: readonly string[];
  readonly maxBodyBytes: number;
  readonly tls: { readonly cert: Buffer; readonly key: Buffer } | undefined;
  readonly logLevel: string;
  readonly shutdownGraceMs: number;
  readonly guessLimit: { readonly attempts: number; readonly windowSeconds: number } | undefined;
  /** How long a passphrase or whiteboard record may be served from memory; 0 = always read. */
  readonly passphraseCacheMs: number;
}

const DEFAULT_CONVERSION_API_BASE = "https://api.netless.link";
const HMAC_ALGORITHMS = ["HS256", "HS384", "HS512"];
const ASYMMETRIC_ALGORITHMS = [
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
const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

type Env = Readonly<Record<string, string | undefined>>;

/** The Redis part of the configuration (the operator CLI reads only this and the JWT claims). */
export interface RedisSettings {
  readonly redis: RedisConfig | undefined;
  readonly keyPrefix: string;
  readonly commandTimeoutMs: number;
}

export function loadRedisSettings(env: Env = process.env): RedisSettings {
  const get = getter(env);
  const redis = parseRedis(
    get("REDIS_URL"),
    get("REDIS_CLUSTER_NODES"),
    get("REDIS_SENTINELS"),
    get("REDIS_SENTINEL_NAME"),
  );
  const keyPrefix = get("REDIS_KEY_PREFIX") ?? "bl:";
  if (/[{}\s]/.test(keyPrefix)) throw new ConfigError("REDIS_KEY_PREFIX", "must not contain braces or white space");
  return { redis, keyPrefix, commandTimeoutMs: int(env, "REDIS_COMMAND_TIMEOUT_MS", 1000, 50, 60_000) };
}

/** What a token must carry to pass the server's checks, and the HS256 secret when JWT_SECRET is set. */
export interface TokenSettings {
  readonly secret: Uint8Array | undefined;
  readonly issuer: string | undefined;
  readonly audience: string | undefined;
  readonly projectClaim: string;
}

export function loadTokenSettings(env: Env = process.env): TokenSettings {
  const key = parseJwtKey(env["JWT_SECRET"], undefined, undefined);
  return { secret: key?.kind === "secret" ? key.secret : undefined, ...jwtClaims(getter(env)) };
}

function jwtClaims(get: (name: string) => string | undefined): Omit<TokenSettings, "secret"> {
  return {
    issuer: get("JWT_ISSUER"),
    audience: get("JWT_AUDIENCE"),
    projectClaim: get("JWT_PROJECT_CLAIM") ?? "project_id",
  };
}

function getter(env: Env): (name: string) => string | undefined {
  return (name) => {
    const v = env[name];
    return v === undefined || v.trim() === "" ? undefined : v.trim();
  };
}

export function loadConfig(env: Env = process.env): Config {
  const get = getter(env);
  const production = get("NODE_ENV") === "production";
  const redisUrl = get("REDIS_URL");
  const clusterNodes = get("REDIS_CLUSTER_NODES");
  const sentinels = get("REDIS_SENTINELS");
  const jwtSecret = env["JWT_SECRET"];
  const jwksUrl = get("JWT_JWKS_URL");
  const jwksFile = get("JWT_JWKS_FILE");
  const demo =
    !production &&
    redisUrl === undefined &&
    clusterNodes === undefined &&
    sentinels === undefined &&
    (jwtSecret === undefined || jwtSecret === "") &&
    jwksUrl === undefined &&
    jwksFile === undefined;

  const { redis, keyPrefix, commandTimeoutMs } = loadRedisSettings(env);
  if (production && redis === undefined) {
    throw new ConfigError(
      "REDIS_URL",
      "is required when NODE_ENV=production (the in-memory store is for the demo only)",
    );
  }

  const key = parseJwtKey(jwtSecret, jwksUrl, jwksFile);
  if (key === undefined && !demo) {
    throw new ConfigError("JWT_SECRET", "(or JWT_JWKS_URL / JWT_JWKS_FILE) is required outside demo mode");
  }
  const algorithms =
    parseList(get("JWT_ALGORITHMS")) ??
    (key === undefined || key.kind === "secret" ? ["HS256"] : ["RS256", "ES256", "EdDSA"]);
  for (const a of algorithms) {
    if (![...HMAC_ALGORITHMS, ...ASYMMETRIC_ALGORITHMS].includes(a)) {
      throw new ConfigError(
        "JWT_ALGORITHMS",
        `has an unsupported algorithm "${a}" (allowed: ${[...HMAC_ALGORITHMS, ...ASYMMETRIC_ALGORITHMS].join(", ")})`,
      );
    }
    const symmetric = HMAC_ALGORITHMS.includes(a);
    if (key !== undefined && symmetric !== (key.kind === "secret")) {
      throw new ConfigError(
        "JWT_ALGORITHMS",
        `"${a}" does not fit the key: ${key.kind === "secret" ? "JWT_SECRET takes HS256/HS384/HS512" : "a JWKS takes RS*, PS*, ES* or EdDSA"}`,
      );
    }
  }

  const conversionApiBase = get("CONVERSION_API_BASE") ?? (demo ? undefined : DEFAULT_CONVERSION_API_BASE);
  if (conversionApiBase !== undefined) checkHttpUrl("CONVERSION_API_BASE", conversionApiBase);

  const tlsCert = get("TLS_CERT");
  const tlsKey = get("TLS_KEY");
  if ((tlsCert === undefined) !== (tlsKey === undefined)) {
    throw new ConfigError(
      tlsCert === undefined ? "TLS_CERT" : "TLS_KEY",
      "must be set together with the other of TLS_CERT/TLS_KEY",
    );
  }

  const logLevel = get("LOG_LEVEL") ?? "info";
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError("LOG_LEVEL", `must be one of ${LOG_LEVELS.join(", ")}`);

  const guessAttempts = int(env, "GUESS_LIMIT", 10, 0, 1_000_000);
  const guessWindow = int(env, "GUESS_WINDOW_SECONDS", 60, 1, 86_400);

  return {
    production,
    demo,
    host: get("HOST") ?? (demo ? "127.0.0.1" : "0.0.0.0"),
    port: int(env, "PORT", 8080, 0, 65535),
    redis,
    redisKeyPrefix: keyPrefix,
    redisCommandTimeoutMs: commandTimeoutMs,
    jwt: { key, algorithms, ...jwtClaims(get) },
    conversionApiBase,
    conversionTimeoutMs: int(env, "CONVERSION_TIMEOUT_MS", 10_000, 100, 120_000),
    corsOrigins: parseCorsOrigins(get("CORS_ORIGINS")),
    maxBodyBytes: int(env, "MAX_BODY_BYTES", 64 * 1024, 256, 16 * 1024 * 1024),
    tls:
      tlsCert === undefined || tlsKey === undefined
        ? undefined
        : { cert: readFileOr("TLS_CERT", tlsCert), key: readFileOr("TLS_KEY", tlsKey) },
    logLevel,
    shutdownGraceMs: int(env, "SHUTDOWN_GRACE_MS", 10_000, 0, 300_000),
    passphraseCacheMs: int(env, "PASSPHRASE_CACHE_MS", 1000, 0, 60_000),
    guessLimit: guessAttempts === 0 ? undefined : { attempts: guessAttempts, windowSeconds: guessWindow },
  };
}

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number from ${min} to ${max} (got "${raw}")`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(name, `must be a whole number from ${min} to ${max} (got ${raw})`);
  return n;
}

function parseList(raw: string | undefined): string[] | undefined {
  if (raw === undefined) return undefined;
  const items = raw
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  return items.length === 0 ? undefined : items;
}

function parseHostPorts(variable: string, raw: string): Array<{ host: string; port: number }> {
  return raw.split(",").map((item) => {
    const m = /^\s*(\[[^\]]+\]|[^:\s]+):(\d{1,5})\s*$/.exec(item);
    const port = Number(m?.[2]);
    if (m === null || m[1] === undefined || port < 1 || port > 65535) {
      throw new ConfigError(variable, `must be a comma-separated list of host:port (got "${item.trim()}")`);
    }
    return { host: m[1].replace(/^\[|\]$/g, ""), port };
  });
}

function parseRedis(
  url: string | undefined,
  clusterNodes: string | undefined,
  sentinels: string | undefined,
  sentinelName: string | undefined,
): RedisConfig | undefined {
  if (url !== undefined && !/^rediss?:\/\//.test(url)) {
    throw new ConfigError("REDIS_URL", "must start with redis:// or rediss://");
  }
  // With Cluster or Sentinel, REDIS_URL only carries the credentials (and rediss:// for TLS).
  const auth = url === undefined ? {} : credentialsOf(url);
  if (clusterNodes !== undefined) {
    if (sentinels !== undefined)
      throw new ConfigError("REDIS_SENTINELS", "cannot be combined with REDIS_CLUSTER_NODES");
    return { mode: "cluster", nodes: parseHostPorts("REDIS_CLUSTER_NODES", clusterNodes), ...auth };
  }
  if (sentinels !== undefined) {
    if (sentinelName === undefined) throw new ConfigError("REDIS_SENTINEL_NAME", "is required with REDIS_SENTINELS");
    return {
      mode: "sentinel",
      sentinels: parseHostPorts("REDIS_SENTINELS", sentinels),
      masterName: sentinelName,
      ...auth,
    };
  }
  return url === undefined ? undefined : { mode: "single", url };
}

function parseJwtKey(
  secret: string | undefined,
  jwksUrl: string | undefined,
  jwksFile: string | undefined,
): JwtKeyConfig | undefined {
  const given = [secret !== undefined && secret !== "", jwksUrl !== undefined, jwksFile !== undefined].filter(
    Boolean,
  ).length;
  if (given > 1)
    throw new ConfigError("JWT_SECRET", "JWT_SECRET, JWT_JWKS_URL and JWT_JWKS_FILE are exclusive: set one");
  if (secret !== undefined && secret !== "") {
    const bytes = new TextEncoder().encode(secret);
    if (bytes.length < 32) throw new ConfigError("JWT_SECRET", "must be at least 32 bytes");
    return { kind: "secret", secret: bytes };
  }
  if (jwksUrl !== undefined) {
    checkHttpUrl("JWT_JWKS_URL", jwksUrl);
    return { kind: "jwks-url", url: new URL(jwksUrl) };
  }
  if (jwksFile !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(jwksFile, "utf8"));
    } catch (e) {
      throw new ConfigError("JWT_JWKS_FILE", `cannot be read as JSON (${(e as Error).message.split("\n")[0]})`);
    }
    if (typeof parsed !== "object" || parsed === null || !Array.isArray((parsed as { keys?: unknown }).keys)) {
      throw new ConfigError("JWT_JWKS_FILE", 'must hold a JSON Web Key Set ({"keys": [...]})');
    }
    return { kind: "jwks-file", path: jwksFile };
  }
  return undefined;
}

function checkHttpUrl(variable: string, value: string): void {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new ConfigError(variable, `must be an absolute http(s) URL (got "${value}")`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    throw new ConfigError(variable, `must be an http or https URL (got "${value}")`);
  }
}

function parseCorsOrigins(raw: string | undefined): string[] {
  const list = parseList(raw) ?? [];
  for (const o of list) {
    if (o === "*") continue;
    let u: URL | undefined;
    try {
      u = new URL(o);
    } catch {
      u = undefined;
    }
    if (u === undefined || u.origin !== o.replace(/\/$/, "")) {
      throw new ConfigError("CORS_ORIGINS", `must list origins like https://app.example.com, or * (got "${o}")`);
    }
  }
  return list.map((o) => o.replace(/\/$/, ""));
}

function readFileOr(variable: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    throw new ConfigError(variable, `cannot be read (${(e as NodeJS.ErrnoException).code ?? "error"})`);
  }
}

function credentialsOf(url: string): { username?: string; password?: string; tls?: boolean } {
  const u = new URL(url);
  return {
    ...(u.username === "" ? {} : { username: decodeURIComponent(u.username) }),
    ...(u.password === "" ? {} : { password: decodeURIComponent(u.password) }),
    ...(u.protocol === "rediss:" ? { tls: true } : {}),
  };
}
