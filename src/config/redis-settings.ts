/**
 * The Redis part of the configuration: which Redis (one node, a Cluster or a
 * Sentinel group), the key prefix and the command timeout. The operator CLI
 * reads only this (and the token settings).
 */
import type { RedisConnectionOptions } from "../store/redis-connection.js";
import { ConfigError } from "./config-error.js";
import { type Env, readHostPorts, readInteger, readText } from "./read-variable.js";

export type RedisConfig = RedisConnectionOptions;

export interface RedisSettings {
  /** Undefined when no Redis is configured (the in-memory store). */
  readonly redis: RedisConfig | undefined;
  readonly keyPrefix: string;
  readonly commandTimeoutMs: number;
}

export function loadRedisSettings(env: Env = process.env): RedisSettings {
  return {
    redis: readRedis(env),
    keyPrefix: readText(env, "REDIS_KEY_PREFIX"),
    commandTimeoutMs: readInteger(env, "REDIS_COMMAND_TIMEOUT_MS"),
  };
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
