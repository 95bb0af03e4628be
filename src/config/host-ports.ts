/**
 * The one reader of `host:port` lists (REDIS_CLUSTER_NODES, REDIS_SENTINELS).
 */
import type { RedisNodeAddress } from "../store/redis-connection.js";
import { ConfigError } from "./config-error.js";

/** `host`, `host:port`, `[ipv6]` or `[ipv6]:port`; a host has no colon, bracket or white space. */
const HOST_PORT = /^(?:\[([^\]]+)\]|([^:[\]\s]+))(?::(\d{1,5}))?$/;

/**
 * Parses `host:port,host:port` (IPv6 in brackets, `[::1]:7000`; a missing port
 * is `defaultPort`). Empty entries are skipped, but the list must name at least
 * one node. Throws a ConfigError naming `variable` and the entry it cannot read.
 */
export function parseHostPorts(variable: string, list: string, defaultPort: number): RedisNodeAddress[] {
  const entries = list
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  if (entries.length === 0) throw new ConfigError(variable, "must list at least one host:port");
  return entries.map((entry) => {
    const match = HOST_PORT.exec(entry);
    const host = match?.[1] ?? match?.[2];
    const port = match?.[3] === undefined ? defaultPort : Number(match[3]);
    if (host === undefined || port < 1 || port > 65535) {
      throw new ConfigError(variable, `must be a comma-separated list of host:port (got "${entry}")`);
    }
    return { host, port };
  });
}
