/**
 * Replicated Redis deployments for failover tests, from the machine's
 * `redis-server` on free loopback ports (./redis-server.ts), tuned to fail over
 * in seconds:
 *
 * - `startReplicaSet`: a primary and its replicas;
 * - `startSentinelGroup`: such a set and three Sentinels (quorum 2) that
 *   promote a replica 1 s after the primary stops answering;
 * - `startReplicatedCluster` (./redis-replicated-cluster.ts): a Redis Cluster
 *   of masters with one replica each.
 *
 * Each handle stops every process it started (replicas added later included)
 * and removes its temporary directory. No persistence: a killed node's data is
 * what its replica had. Every node works in a directory of its own inside the
 * handle's: a replica saves the copy it received as dump.rdb there, which in a
 * shared directory every other test server would load at start.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { eventually } from "./eventually.js";
import { type RedisServerHandle, startRedisServer } from "./redis-server.js";

export const HOST = "127.0.0.1";
export const READY_TIMEOUT_MS = 20_000;
export const SENTINEL_DOWN_AFTER_MS = 1000;

export interface ReplicaSetHandle {
  /** The primary the set started with. */
  readonly primary: RedisServerHandle;
  readonly replicas: readonly RedisServerHandle[];
  /** Starts one more redis-server replicating `ofPort`, and waits until its link is up. */
  addReplica(ofPort: number): Promise<RedisServerHandle>;
  stop(): Promise<void>;
}

/** Starts a primary and `replicas` replicas of it, and waits until every replica has synced. */
export async function startReplicaSet(replicas = 1): Promise<ReplicaSetHandle> {
  const dir = mkdtempSync(join(tmpdir(), "bl-replicas-"));
  const nodes: RedisServerHandle[] = [];
  const start = async (...args: string[]) => {
    const node = await startRedisServer({ args: [...nodeArgs(dir, nodes.length), ...args] });
    nodes.push(node);
    return node;
  };
  const stop = async () => {
    await Promise.all(nodes.map((n) => n.stop()));
    rmSync(dir, { recursive: true, force: true });
  };
  const addReplica = async (ofPort: number) => {
    const replica = await start("--replicaof", HOST, String(ofPort));
    await linkUp(replica.port);
    return replica;
  };
  try {
    const primary = await start();
    for (let i = 0; i < replicas; i++) await start("--replicaof", HOST, String(primary.port));
    await Promise.all(nodes.slice(1).map((r) => linkUp(r.port)));
    await acknowledging(primary.port, replicas);
    return { primary, replicas: nodes.slice(1), addReplica, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

export interface SentinelGroupHandle extends ReplicaSetHandle {
  readonly masterName: string;
  readonly sentinels: readonly RedisServerHandle[];
  /** The port the Sentinels name as the master now (asked of the first one that answers). */
  masterPort(): Promise<number | undefined>;
}

/** A replica set (`startReplicaSet`) watched by three Sentinels; resolves once they could fail it over. */
export async function startSentinelGroup(
  replicas = 1,
  masterName = "boardline-failover",
): Promise<SentinelGroupHandle> {
  const set = await startReplicaSet(replicas);
  const dir = mkdtempSync(join(tmpdir(), "bl-sentinels-"));
  const sentinels: RedisServerHandle[] = [];
  const stop = async () => {
    // The Sentinels first, so none reconfigures what is being stopped.
    await Promise.all(sentinels.map((s) => s.stop()));
    await set.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    // Started once the replicas are linked, so each Sentinel's first INFO of the primary lists them.
    for (let i = 0; i < 3; i++) {
      const config = join(dir, `sentinel-${i}.conf`);
      writeFileSync(config, sentinelConfig(masterName, set.primary.port));
      sentinels.push(await startRedisServer({ sentinelConfig: config }));
    }
    await Promise.all(sentinels.map((s) => sentinelReady(s.port, masterName, replicas)));
  } catch (e) {
    await stop();
    throw e;
  }
  return { ...set, masterName, sentinels, masterPort: () => namedMaster(sentinels, masterName), stop };
}

function sentinelConfig(masterName: string, port: number): string {
  return [
    `sentinel monitor ${masterName} ${HOST} ${port} 2`,
    `sentinel down-after-milliseconds ${masterName} ${SENTINEL_DOWN_AFTER_MS}`,
    `sentinel failover-timeout ${masterName} 4000`,
    `sentinel parallel-syncs ${masterName} 1`,
    "",
  ].join("\n");
}

/** The Sentinel knows the other two Sentinels and the replicas, and says a failover can be authorized. */
async function sentinelReady(port: number, masterName: string, replicas: number): Promise<void> {
  await withClient(port, (s) =>
    eventually(
      async () => {
        const others = (await s.call("SENTINEL", "SENTINELS", masterName)) as unknown[];
        const known = (await s.call("SENTINEL", "REPLICAS", masterName)) as unknown[];
        if (others.length < 2 || known.length < replicas) return false;
        return String(await s.call("SENTINEL", "CKQUORUM", masterName)).startsWith("OK");
      },
      READY_TIMEOUT_MS,
      `Sentinel ${port} to see its peers and replicas`,
    ),
  );
}

async function namedMaster(sentinels: readonly RedisServerHandle[], masterName: string): Promise<number | undefined> {
  for (const sentinel of sentinels) {
    try {
      const addr = await withClient(sentinel.port, (s) => s.call("SENTINEL", "GET-MASTER-ADDR-BY-NAME", masterName));
      if (Array.isArray(addr)) return Number(addr[1]);
    } catch {
      // That Sentinel does not answer: ask the next.
    }
  }
  return undefined;
}

/**
 * The arguments every node of these deployments gets: `--dir` a new directory
 * `node-<n>` inside `dir` (the last `--dir` given wins), and replicas served
 * at once (Redis waits 5 s for more replicas before a diskless sync otherwise).
 */
export function nodeArgs(dir: string, n: number): string[] {
  const path = join(dir, `node-${n}`);
  mkdirSync(path);
  return ["--dir", path, "--repl-diskless-sync-delay", "0"];
}

/** Waits until the replica on `port` has synced with its master. */
export async function linkUp(port: number): Promise<void> {
  await withClient(port, (r) =>
    eventually(
      async () => /master_link_status:up/.test(await r.info("replication")),
      READY_TIMEOUT_MS,
      `the replica on ${port} to sync`,
    ),
  );
}

/**
 * Waits until `replicas` replicas acknowledge a write to the primary on `port`
 * (a link that is up does not yet mean that: the first WAIT after a sync was
 * seen to time out, failing the first write of a REDIS_MIN_REPLICAS test).
 */
export async function acknowledging(port: number, replicas: number): Promise<void> {
  if (replicas === 0) return;
  await withClient(port, (r) =>
    eventually(
      async () => {
        await r.set("bl-harness:replication-check", String(Date.now()));
        return Number(await r.call("WAIT", String(replicas), "1000")) >= replicas;
      },
      READY_TIMEOUT_MS,
      `${replicas} replicas of ${port} to acknowledge a write`,
    ),
  );
}

/** Runs `work` with a short-lived client of the node on `port`. */
export async function withClient<T>(port: number, work: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis({ host: HOST, port, maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true });
  client.on("error", () => {});
  try {
    await client.connect();
    return await work(client);
  } finally {
    client.disconnect();
  }
}
