/**
 * How boardline connects to Redis: one node, a Cluster, or a Sentinel group,
 * all tuned the same way for a request path that must answer within a second
 * even while Redis is down:
 *
 * - no offline queue: a command issued while disconnected fails at once
 *   instead of waiting for a reconnect that may never come;
 * - a socket timeout that drops a connection whose server stopped answering
 *   (a hung or frozen Redis), judged after the event loop read what arrived
 *   (socket-timeout.ts); each call's own deadline is the store's (calls.ts,
 *   deadline.ts), not ioredis's command timeout, whose plain timer fails
 *   commands whose answers wait unread after a busy loop turn;
 * - commands in flight when the connection drops fail (maxRetriesPerRequest 0)
 *   and are never resent after reconnecting: the caller was already told 503,
 *   so a late write would be a surprise;
 * - reconnect attempts back off quickly to a small cap, and a Redis still
 *   loading its data is asked again every LOADING_POLL_MS, so service resumes
 *   well within two seconds of Redis being able to serve.
 */
import type { ConnectionOptions as TlsOptions } from "node:tls";
import { Cluster, Redis, type RedisOptions } from "ioredis";
import { watchSentinelRefusals } from "./sentinel-refusals.js";
import { judgeSocketTimeoutAfterReading } from "./socket-timeout.js";

export interface RedisNodeAddress {
  readonly host: string;
  readonly port: number;
}

export type RedisConnectionOptions =
  | {
      readonly mode: "single";
      /** `redis://[user:password@]host[:port][/db]` or `rediss://…` (TLS). */
      readonly url: string;
      /** Extra TLS settings (CA, client certificate) for a `rediss://` URL. */
      readonly tls?: TlsOptions;
    }
  | {
      readonly mode: "cluster";
      /** Seed nodes; the rest of the cluster is discovered from them. */
      readonly nodes: readonly RedisNodeAddress[];
      readonly username?: string;
      readonly password?: string;
      /** true (or TLS settings) to connect to every node over TLS. */
      readonly tls?: boolean | TlsOptions;
    }
  | {
      readonly mode: "sentinel";
      readonly sentinels: readonly RedisNodeAddress[];
      /** The master group name the sentinels monitor. */
      readonly masterName: string;
      readonly username?: string;
      readonly password?: string;
      readonly sentinelUsername?: string;
      readonly sentinelPassword?: string;
      /** TLS to the Redis master. */
      readonly tls?: boolean | TlsOptions;
      /** TLS to the sentinels themselves. */
      readonly sentinelTls?: boolean | TlsOptions;
      readonly db?: number;
    };

export interface ConnectionTuning {
  readonly commandTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly maxReconnectDelayMs: number;
}

export const DEFAULT_TUNING: ConnectionTuning = {
  commandTimeoutMs: 1000,
  connectTimeoutMs: 1000,
  maxReconnectDelayMs: 500,
};

export type RedisClient = Redis | Cluster;

/**
 * How often a connection asks a Redis that is still loading its data (INFO
 * `loading:1`) whether it is done. ioredis otherwise waits for the ETA Redis
 * reports, up to 10 s; early in a load that ETA is computed from whole seconds
 * elapsed and can be many seconds too long (1 s elapsed for a few percent
 * loaded), which kept boardline unavailable long after Redis was done. An
 * INFO every 100 ms while loading costs Redis nothing worth counting.
 */
export const LOADING_POLL_MS = 100;

/** `name`: the connection's CLIENT SETNAME, as operators see it in CLIENT LIST. */
export function createRedisClient(
  options: RedisConnectionOptions,
  tuning: ConnectionTuning,
  name = "boardline",
): RedisClient {
  judgeSocketTimeoutAfterReading();
  const retryStrategy = (attempt: number) => reconnectDelay(attempt, tuning.maxReconnectDelayMs);
  const common = {
    connectTimeout: tuning.connectTimeoutMs,
    socketTimeout: Math.max(2 * tuning.commandTimeoutMs, 2000),
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    maxLoadingRetryTime: LOADING_POLL_MS,
    connectionName: name,
  } satisfies RedisOptions;

  switch (options.mode) {
    case "single": {
      if (!/^rediss?:\/\//i.test(options.url)) {
        throw new Error("Redis URL must start with redis:// or rediss://");
      }
      const secure = /^rediss:/i.test(options.url);
      if (options.tls && !secure) throw new Error("TLS settings need a rediss:// Redis URL");
      const tls = options.tls ? { tls: options.tls } : {};
      return new Redis(options.url, {
        ...common,
        ...tls,
        enableOfflineQueue: false,
        retryStrategy,
        reconnectOnError: demoted,
      });
    }
    case "sentinel": {
      // ioredis's `tls` alone is not used for the master a Sentinel names:
      // enableTLSForSentinelMode is what makes that connection TLS.
      const tls = tlsOption(options.tls);
      const sentinelTls = tlsOption(options.sentinelTls);
      const refusals = sentinelTls === undefined ? undefined : watchSentinelRefusals(sentinelTls);
      const client = new Redis({
        ...common,
        sentinels: options.sentinels.map(({ host, port }) => ({ host, port })),
        name: options.masterName,
        username: options.username,
        password: options.password,
        sentinelUsername: options.sentinelUsername,
        sentinelPassword: options.sentinelPassword,
        tls,
        enableTLSForSentinelMode: tls !== undefined,
        ...(refusals === undefined ? {} : { sentinelTLS: refusals.tls }),
        reconnectOnError: demoted,
        db: options.db,
        enableOfflineQueue: false,
        retryStrategy,
        sentinelRetryStrategy: retryStrategy,
      });
      refusals?.explainErrorsOf(client);
      return client;
    }
    case "cluster": {
      const tls = tlsOption(options.tls);
      const nodes = options.nodes.map(({ host, port }) => ({ host, port }));
      return new Cluster(nodes, {
        enableOfflineQueue: false,
        clusterRetryStrategy: retryStrategy,
        // By default a lost node is not reconnected until a MOVED refreshes the
        // slots; a restarted master should come back as fast as a single node.
        clusterNodeRetryStrategy: retryStrategy,
        slotsRefreshTimeout: tuning.connectTimeoutMs,
        redisOptions: { ...common, username: options.username, password: options.password, tls },
        // With TLS, connect by the name the certificates carry (e.g. ElastiCache).
        ...(tls
          ? { dnsLookup: (address: string, callback: (e: null, a: string) => void) => callback(null, address) }
          : {}),
      });
    }
  }
}

/**
 * Whether an error says the server we write to is a replica now (a failover
 * demoted it while the connection stayed up): then reconnect, which through
 * Sentinel asks for the new master. The failed command is not resent (1).
 * (ioredis's `failoverDetector`, which reconnects on `+switch-master`, is not
 * used: a +switch-master that arrives while the client is already
 * reconnecting after the master died ends the client for good — seen in
 * test/faults/sentinel-failover.test.ts.)
 */
function demoted(error: Error): 1 | false {
  return /^READONLY|replica instances/.test(error.message) ? 1 : false;
}

/** Exponential from 50 ms, capped (with a little jitter below the cap). */
export function reconnectDelay(attempt: number, maxMs: number): number {
  const exponential = 50 * 2 ** Math.min(Math.max(attempt - 1, 0), 10);
  return Math.round(Math.min(exponential, maxMs) * (0.8 + 0.2 * Math.random()));
}

function tlsOption(tls: boolean | TlsOptions | undefined): TlsOptions | undefined {
  if (tls === true) return {};
  return tls === false ? undefined : tls;
}
