/**
 * The Redis rows of the configuration table (variables.ts, where they take
 * their place after NODE_ENV): which Redis, how boardline logs in to it and
 * its Sentinels and checks their certificates, the key prefix, the command
 * timeout and the replicas a write must reach. Kept apart only for the size
 * of variables.ts; the same rules apply (see there).
 */
import type { Variable } from "./variable-kinds.js";

export const REDIS_VARIABLES = {
  REDIS_URL: {
    kind: "text",
    // A password rides in it.
    secret: true,
    defaultNote: "— (in-memory store)",
    allowed: "`redis://[user:pass@]host:port[/db]` or `rediss://…` (TLS)",
    check: (v) => (/^rediss?:\/\//.test(v) ? undefined : "must start with redis:// or rediss://"),
    meaning: "the Redis to use; with cluster/sentinel it only carries credentials and TLS",
  },
  REDIS_CLUSTER_NODES: {
    kind: "hosts",
    defaultPort: 6379,
    meaning: "seed nodes of a Redis Cluster (not together with `REDIS_SENTINELS`)",
  },
  REDIS_SENTINELS: {
    kind: "hosts",
    defaultPort: 26379,
    meaning: "the Sentinels to ask for the master; needs `REDIS_SENTINEL_NAME`",
  },
  REDIS_SENTINEL_NAME: {
    kind: "text",
    allowed: "a name",
    meaning: "the master group name the Sentinels monitor",
  },
  REDIS_SENTINEL_USERNAME: {
    kind: "text",
    allowed: "a user name",
    meaning:
      "the ACL user boardline logs in to the Sentinels as (the Redis user and password are `REDIS_URL`'s); needs `REDIS_SENTINEL_PASSWORD`",
  },
  REDIS_SENTINEL_PASSWORD: {
    kind: "text",
    secret: true,
    untrimmed: true,
    allowed: "one line",
    // Neither a Sentinel's config file nor ACL SETUSER can hold a password with a line break: one comes from a mis-made file.
    check: (v) => (/[\r\n]/.test(v) ? "must be one line" : undefined),
    meaning: "the Sentinels' password (`requirepass`, or `REDIS_SENTINEL_USERNAME`'s); needs `REDIS_SENTINELS`",
  },
  REDIS_TLS_CA: {
    kind: "file",
    allowed: "a PEM file",
    meaning:
      "the CA certificate(s) the certificates of Redis, of every Cluster node and of the Sentinels must be signed by, instead of the system's; needs a `rediss://` `REDIS_URL`",
  },
  REDIS_TLS_CERT: {
    kind: "file",
    allowed: "a PEM file",
    meaning:
      "client certificate (chain) boardline shows Redis and the Sentinels (mutual TLS, `tls-auth-clients yes`); set together with `REDIS_TLS_KEY`; needs a `rediss://` `REDIS_URL`",
  },
  REDIS_TLS_KEY: {
    kind: "file",
    allowed: "a PEM file",
    meaning: "the client certificate's private key; set together with `REDIS_TLS_CERT`",
  },
  REDIS_TLS_SERVERNAME: {
    kind: "text",
    allowed: "a DNS name",
    check: (v) => (isDnsName(v) ? undefined : "must be a DNS name (not an IP address)"),
    meaning:
      "the name every certificate of Redis, of the Cluster nodes and of the Sentinels is checked for (and sent as SNI) instead of the address boardline dials: for Sentinels that name the master, or a Cluster that announces its nodes, by IP addresses the certificates do not carry. Every certificate must then carry this name; needs a `rediss://` `REDIS_URL`",
  },
  REDIS_KEY_PREFIX: {
    kind: "text",
    default: "bl:",
    allowed: "no braces or white space",
    check: (v) => (/[{}\s]/.test(v) ? "must not contain braces or white space" : undefined),
    meaning: "prefix of every key",
  },
  REDIS_COMMAND_TIMEOUT_MS: {
    kind: "integer",
    default: 1000,
    min: 50,
    max: 60_000,
    meaning: "a Redis call slower than this fails as 503",
  },
  REDIS_MIN_REPLICAS: {
    kind: "integer",
    default: 0,
    min: 0,
    max: 16,
    meaning:
      "replicas that must have a write before boardline acknowledges it: each write a caller is told about (a mute, a new conversion, the follower's saves, the CLI's writes) is followed by `WAIT` on the connection that carried it, and fewer replicas within `REDIS_REPLICA_TIMEOUT_MS` answer 503 (outcome unknown), never 200. `0`: the primary's acknowledgement is enough. Needs Redis; run at least one replica more than this, or writes answer 503 after a failover until a replica is back",
  },
  REDIS_REPLICA_TIMEOUT_MS: {
    kind: "integer",
    default: 500,
    min: 1,
    max: 59_999,
    meaning:
      "how long a write waits for `REDIS_MIN_REPLICAS` replicas (the `WAIT` timeout); with replicas required it must be below `REDIS_COMMAND_TIMEOUT_MS`. Such a write answers within `REDIS_COMMAND_TIMEOUT_MS` + this",
  },
} as const satisfies Record<string, Variable>;

/** A DNS name of dot-separated labels (letters, digits, inner hyphens), not an IPv4 address, which SNI cannot carry. */
function isDnsName(value: string): boolean {
  const label = "[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
  return value.length <= 253 && new RegExp(`^${label}(?:\\.${label})*$`).test(value) && !/^[\d.]+$/.test(value);
}
