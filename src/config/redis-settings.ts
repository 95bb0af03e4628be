/**
 * The Redis part of the configuration: which Redis (one node, a Cluster or a
 * Sentinel group), the key prefix, the command timeout and how many replicas
 * must have a write before it is acknowledged. The operator CLI reads only
 * this (and the token settings).
 */
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
 */
function readRedis(env: Env): RedisConfig | undefined {
  const url = readText(env, "REDIS_URL");
  const clusterNodes = readHostPorts(env, "REDIS_CLUSTER_NODES");
  const sentinels = readHostPorts(env, "REDIS_SENTINELS");
  const auth = url === undefined ? {} : credentialsOf(url);
  if (clusterNodes !== undefined) {
    if (sentinels !== undefined) {
      throw new ConfigError("REDIS_SENTINELS", "cannot be combined with REDIS_CLUSTER_NODES");
    }
    return { mode: "cluster", nodes: clusterNodes, ...auth };
  }
  if (sentinels !== undefined) {
    const masterName = readText(env, "REDIS_SENTINEL_NAME");
    if (masterName === undefined) throw new ConfigError("REDIS_SENTINEL_NAME", "is required with REDIS_SENTINELS");
    return { mode: "sentinel", sentinels, masterName, ...auth };
  }
  return url === undefined ? undefined : { mode: "single", url };
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
