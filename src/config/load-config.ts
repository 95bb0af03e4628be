/**
 * The server's whole configuration, read from the environment and validated
 * in one go. Each variable is read through its row in variables.ts; the rules
 * that tie variables together are here:
 *
 * - demo mode is a start with nothing configured: outside production, no Redis
 *   (REDIS_URL, REDIS_CLUSTER_NODES, REDIS_SENTINELS) and no JWT key source;
 * - production requires Redis, and anything but the demo requires a key source;
 * - the demo listens on 127.0.0.1 and converts with the bundled simulator;
 * - /metrics is served on METRICS_PORT, apart from the public PORT, except in
 *   the demo or with METRICS_ON_PUBLIC_PORT=true (which excludes METRICS_PORT);
 * - TLS_CERT and TLS_KEY come together; GUESS_LIMIT=0 turns the guess limit off;
 * - conversion webhooks need their secret outside the demo (webhook-settings.ts).
 */
import { readFileSync } from "node:fs";
import {
  ConfigError,
  type Env,
  isSet,
  readChoice,
  readHttpUrl,
  readInteger,
  readList,
  readText,
} from "./read-variable.js";
import { type JwtSettings, KEY_SOURCES, loadJwtSettings } from "./jwt-settings.js";
import { loadRedisSettings, type RedisConfig, type RedisSettings } from "./redis-settings.js";
import { loadWebhookSettings, type WebhookConfig } from "./webhook-settings.js";
import { defaultWatchShare } from "./watch-variables.js";
import { developmentKeyRing, type KeyRing, keyRing } from "../secrets/key-ring.js";

export interface Config {
  readonly production: boolean;
  /** No Redis and no JWT keys configured outside production: seeded demo with a simulator. */
  readonly demo: boolean;
  readonly host: string;
  readonly port: number;
  /** Where `/metrics` is served apart from `PORT`; undefined: on `PORT` (the demo, METRICS_ON_PUBLIC_PORT). */
  readonly metricsPort: number | undefined;
  readonly redis: RedisConfig | undefined;
  readonly redisKeyPrefix: string;
  readonly redisCommandTimeoutMs: number;
  /** REDIS_MIN_REPLICAS, REDIS_REPLICA_TIMEOUT_MS: replicas a write must reach before it is acknowledged. */
  readonly redisReplicaAck: RedisSettings["replicaAck"];
  readonly jwt: JwtSettings;
  /** Undefined in demo mode without CONVERSION_API_BASE: the bundled simulator is used. */
  readonly conversionApiBase: string | undefined;
  /** The Netless API new conversion tasks are created on. */
  readonly conversionApi: "projector" | "legacy";
  readonly conversionTimeoutMs: number;
  /** How the conversion follower polls (CONVERSION_POLL_*, CONVERSION_FOLLOW_MS), and the queues' limit. */
  readonly conversionFollow: {
    readonly firstPollMs: number;
    readonly maxPollMs: number;
    readonly followMs: number;
    readonly maxInFlight: number;
    readonly queueMax: number;
  };
  readonly conversionRetentionDays: number;
  /** How long the answer of a ConvertFile with an Idempotency-Key is kept (IDEMPOTENCY_TTL_HOURS). */
  readonly idempotencyTtlHours: number;
  /** The lifetime of a channel created without `expire_time` (CHANNEL_DEFAULT_TTL_HOURS); undefined: none. */
  readonly channelDefaultTtlMs: number | undefined;
  /** Conversion webhooks (CONVERSION_WEBHOOK_BASE, CONVERSION_WEBHOOK_SECRET); undefined: off. */
  readonly conversionWebhook: WebhookConfig | undefined;
  readonly maxWatches: number;
  /** The most watches one project holds on this instance (MAX_WATCHES_PER_PROJECT; default a quarter of `maxWatches`). */
  readonly maxWatchesPerProject: number;
  readonly maxWatchChannels: number;
  /** PSTN_PRESENCE_TTL_SECONDS (in ms) and PSTN_MAX_LINE. */
  readonly line: { readonly leaseMs: number; readonly maxLine: number };
  /** DEMO_PHONE_GATEWAY_MS: the demo's telephone-gateway simulator's period; 0: off (and always 0 outside the demo). */
  readonly demoPhoneGatewayMs: number;
  readonly corsOrigins: readonly string[];
  readonly maxBodyBytes: number;
  readonly tls: { readonly cert: Buffer; readonly key: Buffer } | undefined;
  readonly logLevel: string;
  readonly shutdownDelayMs: number;
  readonly shutdownGraceMs: number;
  readonly guessLimit:
    | { readonly attempts: number; readonly windowSeconds: number; readonly provenSeconds: number }
    | undefined;
  /** How long a passphrase or whiteboard record may be served from memory; 0 = always read. */
  readonly passphraseCacheMs: number;
  /** PASSPHRASE_KEYS: the keys of the passphrase index, current first. */
  readonly passphraseKeys: KeyRing;
  /** SECRETS_KEYS: the keys that encrypt stored Netless credentials, current first. */
  readonly secretsKeys: KeyRing;
  /** The variables of the two key rings that fell back to the fixed development key (never in production). */
  readonly developmentKeys: readonly string[];
  /** Traces (OpenTelemetry), on when OTEL_EXPORTER_OTLP_ENDPOINT is set; undefined: off. */
  readonly tracing: { readonly endpoint: string; readonly serviceName: string } | undefined;
}

/** The variables that configure a Redis; with none of them, the store is in memory. */
const STORE_SOURCES = ["REDIS_URL", "REDIS_CLUSTER_NODES", "REDIS_SENTINELS"] as const;

const DEMO_HOST = "127.0.0.1";

/** Demo mode: outside production, with neither a store nor a JWT key source configured. */
function isDemo(env: Env): boolean {
  return !isProduction(env) && ![...STORE_SOURCES, ...KEY_SOURCES].some((name) => isSet(env, name));
}

function isProduction(env: Env): boolean {
  return readText(env, "NODE_ENV") === "production";
}

export function loadConfig(env: Env = process.env): Config {
  const production = isProduction(env);
  const demo = isDemo(env);
  const redisSettings = loadRedisSettings(env);
  if (production && redisSettings.redis === undefined) {
    throw new ConfigError(
      "REDIS_URL",
      "is required when NODE_ENV=production (the in-memory store is for the demo only)",
    );
  }
  const jwt = loadJwtSettings(env, !demo);
  const conversionApi = readChoice(env, "CONVERSION_API") === "legacy" ? "legacy" : "projector";
  return {
    production,
    demo,
    host: demo && !isSet(env, "HOST") ? DEMO_HOST : readText(env, "HOST"),
    port: readInteger(env, "PORT"),
    metricsPort: readMetricsPort(env, demo),
    redis: redisSettings.redis,
    redisKeyPrefix: redisSettings.keyPrefix,
    redisCommandTimeoutMs: redisSettings.commandTimeoutMs,
    redisReplicaAck: redisSettings.replicaAck,
    jwt,
    conversionApiBase: demo && !isSet(env, "CONVERSION_API_BASE") ? undefined : readHttpUrl(env, "CONVERSION_API_BASE"),
    conversionApi,
    conversionTimeoutMs: readInteger(env, "CONVERSION_TIMEOUT_MS"),
    conversionFollow: {
      firstPollMs: readInteger(env, "CONVERSION_POLL_FIRST_MS"),
      maxPollMs: readInteger(env, "CONVERSION_POLL_MAX_MS"),
      followMs: readInteger(env, "CONVERSION_FOLLOW_MS"),
      maxInFlight: readInteger(env, "CONVERSION_MAX_POLLS"),
      queueMax: readInteger(env, "CONVERSION_QUEUE_MAX"),
    },
    conversionRetentionDays: readInteger(env, "CONVERSION_RETENTION_DAYS"),
    idempotencyTtlHours: readInteger(env, "IDEMPOTENCY_TTL_HOURS"),
    channelDefaultTtlMs: loadChannelDefaultTtlMs(env),
    conversionWebhook: loadWebhookSettings(env, demo, conversionApi),
    ...readWatchShares(env),
    maxWatchChannels: readInteger(env, "MAX_WATCH_CHANNELS"),
    line: { leaseMs: readInteger(env, "PSTN_PRESENCE_TTL_SECONDS") * 1000, maxLine: readInteger(env, "PSTN_MAX_LINE") },
    // Checked everywhere, so a wrong value is caught before anyone relies on it.
    demoPhoneGatewayMs: readInteger(env, "DEMO_PHONE_GATEWAY_MS") * (demo ? 1 : 0),
    corsOrigins: (readList(env, "CORS_ORIGINS") ?? []).map((origin) => origin.replace(/\/$/, "")),
    maxBodyBytes: readInteger(env, "MAX_BODY_BYTES"),
    tls: readTls(env),
    logLevel: readChoice(env, "LOG_LEVEL"),
    // The demo runs alone on a laptop: no load balancer to wait for.
    shutdownDelayMs: demo && !isSet(env, "SHUTDOWN_DELAY_MS") ? 0 : readInteger(env, "SHUTDOWN_DELAY_MS"),
    shutdownGraceMs: readInteger(env, "SHUTDOWN_GRACE_MS"),
    guessLimit: readGuessLimit(env),
    passphraseCacheMs: readInteger(env, "PASSPHRASE_CACHE_MS"),
    ...loadKeyRings(env),
    tracing: readTracing(env),
  };
}

/**
 * PASSPHRASE_KEYS and SECRETS_KEYS. Production needs keys of its own, as it
 * needs a Redis; elsewhere a fixed key stands in, so the demo and tests need
 * no configuration, and start-up logs which variables it stood in for. The
 * CLI reads them too, to write what the server reads.
 */
export function loadKeyRings(
  env: Env = process.env,
): Pick<Config, "passphraseKeys" | "secretsKeys" | "developmentKeys"> {
  const production = isProduction(env);
  const developmentKeys: string[] = [];
  const read = (name: KeyRingName): KeyRing => {
    const ring = readKeyRing(env, name, production);
    if (ring !== undefined) return ring;
    developmentKeys.push(name);
    return developmentKeyRing(name);
  };
  return { passphraseKeys: read("PASSPHRASE_KEYS"), secretsKeys: read("SECRETS_KEYS"), developmentKeys };
}

type KeyRingName = "PASSPHRASE_KEYS" | "SECRETS_KEYS";

/** The ring a variable lists; undefined when it is unset outside production (the development key stands in). */
function readKeyRing(env: Env, name: KeyRingName, production: boolean): KeyRing | undefined {
  const items = readList(env, name);
  if (items !== undefined) return keyRing(items);
  if (production) throw new ConfigError(name, "is required when NODE_ENV=production (openssl rand -base64 32)");
  return undefined;
}

/**
 * SECRETS_KEYS alone, as the server reads it, for the CLI: it reads and writes
 * the same sealed records as the server it stands next to.
 */
export function loadSecretsKeys(env: Env = process.env): KeyRing {
  return readKeyRing(env, "SECRETS_KEYS", isProduction(env)) ?? developmentKeyRing("SECRETS_KEYS");
}

/**
 * METRICS_PORT, or undefined for `/metrics` on PORT: asked for with
 * METRICS_ON_PUBLIC_PORT=true, or the demo's default (a laptop has no public
 * port to protect, and one port is simpler to try).
 */
function readMetricsPort(env: Env, demo: boolean): number | undefined {
  if (readChoice(env, "METRICS_ON_PUBLIC_PORT") === "true") {
    if (isSet(env, "METRICS_PORT")) {
      throw new ConfigError(
        "METRICS_PORT",
        "must not be set with METRICS_ON_PUBLIC_PORT=true (/metrics is on PORT then)",
      );
    }
    return undefined;
  }
  return demo && !isSet(env, "METRICS_PORT") ? undefined : readInteger(env, "METRICS_PORT");
}

/** MAX_WATCHES and a project's share of them, which cannot be more than all of them. */
function readWatchShares(env: Env): Pick<Config, "maxWatches" | "maxWatchesPerProject"> {
  const maxWatches = readInteger(env, "MAX_WATCHES");
  if (!isSet(env, "MAX_WATCHES_PER_PROJECT"))
    return { maxWatches, maxWatchesPerProject: defaultWatchShare(maxWatches) };
  const maxWatchesPerProject = readInteger(env, "MAX_WATCHES_PER_PROJECT");
  if (maxWatchesPerProject > maxWatches) {
    throw new ConfigError(
      "MAX_WATCHES_PER_PROJECT",
      `(${maxWatchesPerProject}) cannot be more than MAX_WATCHES (${maxWatches}): a project's share is part of the instance's watches`,
    );
  }
  return { maxWatches, maxWatchesPerProject };
}

function readTracing(env: Env): Config["tracing"] {
  const endpoint = readHttpUrl(env, "OTEL_EXPORTER_OTLP_ENDPOINT");
  return endpoint === undefined ? undefined : { endpoint, serviceName: readText(env, "OTEL_SERVICE_NAME") };
}

/** Both TLS_CERT and TLS_KEY, read at start-up, or neither. */
function readTls(env: Env): Config["tls"] {
  const cert = readText(env, "TLS_CERT");
  const key = readText(env, "TLS_KEY");
  if ((cert === undefined) !== (key === undefined)) {
    throw new ConfigError(
      cert === undefined ? "TLS_CERT" : "TLS_KEY",
      "must be set together with the other of TLS_CERT/TLS_KEY",
    );
  }
  if (cert === undefined || key === undefined) return undefined;
  return { cert: readFile("TLS_CERT", cert), key: readFile("TLS_KEY", key) };
}

function readGuessLimit(env: Env): Config["guessLimit"] {
  const attempts = readInteger(env, "GUESS_LIMIT");
  const windowSeconds = readInteger(env, "GUESS_WINDOW_SECONDS");
  const provenSeconds = readInteger(env, "GUESS_PROVEN_SECONDS");
  return attempts === 0 ? undefined : { attempts, windowSeconds, provenSeconds };
}

function readFile(variable: "TLS_CERT" | "TLS_KEY", path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    throw new ConfigError(variable, `cannot be read (${(e as NodeJS.ErrnoException).code ?? "error"})`);
  }
}

/** CHANNEL_DEFAULT_TTL_HOURS in ms, or undefined when unset (channels then live until deleted); the CLI reads it too. */
export function loadChannelDefaultTtlMs(env: Env = process.env): number | undefined {
  return isSet(env, "CHANNEL_DEFAULT_TTL_HOURS")
    ? readInteger(env, "CHANNEL_DEFAULT_TTL_HOURS") * 3_600_000
    : undefined;
}
