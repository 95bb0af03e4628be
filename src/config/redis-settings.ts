/**
 * The Redis part of the configuration: which Redis (one node, a Cluster or a
 * Sentinel group), the key prefix, the command timeout and how many replicas
 * must have a write before it is acknowledged. The operator CLI reads only
 * this (and the token settings).
 */
import { readFileSync } from "node:fs";
import type { ConnectionOptions as TlsOptions } from "node:tls";
import type { RedisConnectionOptions } from "../store/redis/connection.js";
import type { ReplicaAck } from "../store/redis/replica-ack.js";
import { ConfigError, type Env, readHostPorts, readInteger, readText } from "./read-variable.js";

export type RedisConfig = RedisConnectionOptions;

export interface RedisSettings {
  /** Undefined when no Redis is configured (the in-memory store). */
  readonly redis: RedisConfig | undefined;
  readonly keyPrefix: string;
  readonly commandTimeoutMs: number;
  /** REDIS_MIN_REPLICAS and REDIS_REPLICA_TIMEOUT_MS; `minReplicas` 0: no WAIT. */
  readonly replicaAck: ReplicaAck;
}

export function loadRedisSettings(env: Env = process.env): RedisSettings {
  const redis = readRedis(env);
  const commandTimeoutMs = readInteger(env, "REDIS_COMMAND_TIMEOUT_MS");
  return {
    redis,
    keyPrefix: readText(env, "REDIS_KEY_PREFIX"),
    commandTimeoutMs,
    replicaAck: readReplicaAck(env, redis !== undefined, commandTimeoutMs),
  };
}

/**
 * Replicas are asked for only with a Redis, and the WAIT must end before the
 * command timeout would cut it off (so its count, not a time-out, decides).
 */
function readReplicaAck(env: Env, hasRedis: boolean, commandTimeoutMs: number): ReplicaAck {
  const minReplicas = readInteger(env, "REDIS_MIN_REPLICAS");
  const timeoutMs = readInteger(env, "REDIS_REPLICA_TIMEOUT_MS");
  if (minReplicas > 0 && !hasRedis) {
    throw new ConfigError("REDIS_MIN_REPLICAS", "needs a Redis (REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS)");
  }
  if (minReplicas > 0 && timeoutMs >= commandTimeoutMs) {
    throw new ConfigError(
      "REDIS_REPLICA_TIMEOUT_MS",
      `must be below REDIS_COMMAND_TIMEOUT_MS (${commandTimeoutMs}) when REDIS_MIN_REPLICAS is set`,
    );
  }
  return { minReplicas, timeoutMs };
}

/**
 * REDIS_CLUSTER_NODES or REDIS_SENTINELS (not both) choose a Cluster or a
 * Sentinel group, and then REDIS_URL only carries the credentials (and
 * rediss:// for TLS). Otherwise REDIS_URL is the one node, if set.
 * rediss:// means TLS to every server boardline talks to: the node, every
 * Cluster node, the Sentinels and the master they name, all checked against
 * REDIS_TLS_CA (or the system's CAs) and for the address dialled (or
 * REDIS_TLS_SERVERNAME), so no password crosses the network in clear.
 */
function readRedis(env: Env): RedisConfig | undefined {
  const url = readText(env, "REDIS_URL");
  const clusterNodes = readHostPorts(env, "REDIS_CLUSTER_NODES");
  const sentinels = readHostPorts(env, "REDIS_SENTINELS");
  const { tls: secure, ...auth } = url === undefined ? {} : credentialsOf(url);
  const tlsSettings = readRedisTls(env, secure === true);
  const tls = secure === true ? (tlsSettings ?? {}) : undefined;
  const sentinelAuth = readSentinelAuth(env, sentinels !== undefined);
  if (clusterNodes !== undefined) {
    if (sentinels !== undefined) {
      throw new ConfigError("REDIS_SENTINELS", "cannot be combined with REDIS_CLUSTER_NODES");
    }
    return { mode: "cluster", nodes: clusterNodes, ...auth, ...(tls === undefined ? {} : { tls }) };
  }
  if (sentinels !== undefined) {
    const masterName = readText(env, "REDIS_SENTINEL_NAME");
    if (masterName === undefined) throw new ConfigError("REDIS_SENTINEL_NAME", "is required with REDIS_SENTINELS");
    const tlsBoth = tls === undefined ? {} : { tls, sentinelTls: tls };
    return { mode: "sentinel", sentinels, masterName, ...auth, ...sentinelAuth, ...tlsBoth };
  }
  if (url === undefined) return undefined;
  return { mode: "single", url, ...(tlsSettings === undefined ? {} : { tls: tlsSettings }) };
}

/** REDIS_SENTINEL_USERNAME and REDIS_SENTINEL_PASSWORD: only with Sentinels, and no user without a password. */
function readSentinelAuth(env: Env, hasSentinels: boolean): { sentinelUsername?: string; sentinelPassword?: string } {
  const sentinelUsername = readText(env, "REDIS_SENTINEL_USERNAME");
  const sentinelPassword = readText(env, "REDIS_SENTINEL_PASSWORD");
  for (const [name, value] of [
    ["REDIS_SENTINEL_USERNAME", sentinelUsername],
    ["REDIS_SENTINEL_PASSWORD", sentinelPassword],
  ] as const) {
    if (value !== undefined && !hasSentinels) throw new ConfigError(name, "needs REDIS_SENTINELS");
  }
  if (sentinelUsername !== undefined && sentinelPassword === undefined) {
    throw new ConfigError("REDIS_SENTINEL_USERNAME", "needs REDIS_SENTINEL_PASSWORD");
  }
  return {
    ...(sentinelUsername === undefined ? {} : { sentinelUsername }),
    ...(sentinelPassword === undefined ? {} : { sentinelPassword }),
  };
}

/**
 * REDIS_TLS_CA, REDIS_TLS_CERT with REDIS_TLS_KEY (both or neither) and
 * REDIS_TLS_SERVERNAME, the files read at start-up; undefined when none is
 * set. Each needs a rediss:// REDIS_URL: a CA set for a plain connection
 * would be a TLS the operator believes in and does not have.
 */
function readRedisTls(env: Env, secure: boolean): TlsOptions | undefined {
  const ca = readText(env, "REDIS_TLS_CA");
  const cert = readText(env, "REDIS_TLS_CERT");
  const key = readText(env, "REDIS_TLS_KEY");
  const servername = readText(env, "REDIS_TLS_SERVERNAME");
  if ((cert === undefined) !== (key === undefined)) {
    throw new ConfigError(
      cert === undefined ? "REDIS_TLS_CERT" : "REDIS_TLS_KEY",
      "must be set together with the other of REDIS_TLS_CERT/REDIS_TLS_KEY",
    );
  }
  if (ca === undefined && cert === undefined && servername === undefined) return undefined;
  if (!secure) {
    const first = ca === undefined ? (cert === undefined ? "REDIS_TLS_SERVERNAME" : "REDIS_TLS_CERT") : "REDIS_TLS_CA";
    throw new ConfigError(first, "needs a rediss:// REDIS_URL");
  }
  return {
    ...(servername === undefined ? {} : { servername }),
    ...(ca === undefined ? {} : { ca: readPem("REDIS_TLS_CA", ca) }),
    ...(cert === undefined || key === undefined
      ? {}
      : { cert: readPem("REDIS_TLS_CERT", cert), key: readPem("REDIS_TLS_KEY", key) }),
  };
}

/** The file's bytes; an unreadable file is a ConfigError with the errno code (a key's content never shows). */
function readPem(variable: "REDIS_TLS_CA" | "REDIS_TLS_CERT" | "REDIS_TLS_KEY", path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    throw new ConfigError(variable, `cannot be read (${(e as NodeJS.ErrnoException).code ?? "error"}: ${path})`);
  }
}

function credentialsOf(url: string): { username?: string; password?: string; tls?: boolean } {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    // The URL itself stays out of the message: it may hold a password.
    throw new ConfigError("REDIS_URL", "is not a valid URL");
  }
  return {
    ...(u.username === "" ? {} : { username: decodeURIComponent(u.username) }),
    ...(u.password === "" ? {} : { password: decodeURIComponent(u.password) }),
    ...(u.protocol === "rediss:" ? { tls: true } : {}),
  };
}
