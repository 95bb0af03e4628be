/**
 * The Redis deployments boardline supports besides a single node, built from
 * the machine's `redis-server` on free loopback ports (./redis-server.ts): a
 * Redis Cluster of masters that share the 16 384 slots, and a master watched
 * by one Sentinel. Throw-away and without persistence, like the single node.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { eventually } from "./eventually.js";
import { type RedisServerHandle, startRedisServer } from "./redis-server.js";

const HOST = "127.0.0.1";
const SLOTS = 16_384;
const READY_TIMEOUT_MS = 15_000;

export interface RedisClusterHandle {
  /** One per master, in slot order. */
  readonly nodes: readonly RedisServerHandle[];
  /** Seed nodes for a cluster client: every master. */
  readonly seeds: ReadonlyArray<{ host: string; port: number }>;
  stop(): Promise<void>;
}

/** Starts `size` masters, gives each an equal range of slots, and waits for `cluster_state:ok` on all. */
export async function startRedisCluster(size = 3): Promise<RedisClusterHandle> {
  // A fresh directory: a nodes.conf left by an earlier run on the same port would carry its slots.
  const dir = mkdtempSync(join(tmpdir(), "bl-cluster-"));
  const nodes = await Promise.all(
    Array.from({ length: size }, (_, i) =>
      startRedisServer({
        args: [
          "--cluster-enabled",
          "yes",
          "--cluster-config-file",
          join(dir, `nodes-${i}.conf`),
          "--cluster-node-timeout",
          "5000",
        ],
      }),
    ),
  );
  const stop = async () => {
    await Promise.all(nodes.map((n) => n.stop()));
    rmSync(dir, { recursive: true, force: true });
  };
  const admins = nodes.map((n) => new Redis(n.url, { maxRetriesPerRequest: 1 }));
  try {
    const per = Math.ceil(SLOTS / size);
    for (const [i, admin] of admins.entries()) {
      // ADDSLOTS with every slot, not ADDSLOTSRANGE: that one needs Redis 7.
      const slots = Array.from({ length: Math.min(SLOTS, (i + 1) * per) - i * per }, (_, k) => String(i * per + k));
      await admin.call("CLUSTER", "ADDSLOTS", ...slots);
    }
    const [first] = admins;
    for (const node of nodes.slice(1)) await first?.call("CLUSTER", "MEET", HOST, String(node.port));
    await eventually(
      async () => {
        for (const admin of admins) {
          const info = String(await admin.call("CLUSTER", "INFO"));
          if (!info.includes("cluster_state:ok") || !info.includes(`cluster_known_nodes:${size}`)) return false;
          if (!info.includes(`cluster_slots_assigned:${SLOTS}`)) return false;
        }
        return true;
      },
      READY_TIMEOUT_MS,
      "the cluster to agree",
    );
  } catch (e) {
    await stop();
    throw e;
  } finally {
    for (const admin of admins) admin.disconnect();
  }
  return { nodes, seeds: nodes.map((n) => ({ host: HOST, port: n.port })), stop };
}

export interface RedisSentinelHandle {
  readonly master: RedisServerHandle;
  readonly sentinel: RedisServerHandle;
  readonly masterName: string;
  stop(): Promise<void>;
}

/** Starts a master and one Sentinel that monitors it (quorum 1), and waits until the Sentinel names it. */
export async function startRedisSentinel(masterName = "boardline-test"): Promise<RedisSentinelHandle> {
  const master = await startRedisServer();
  const dir = mkdtempSync(join(tmpdir(), "bl-sentinel-"));
  const config = join(dir, "sentinel.conf");
  writeFileSync(config, `sentinel monitor ${masterName} ${HOST} ${master.port} 1\n`);
  let sentinel: RedisServerHandle;
  try {
    sentinel = await startRedisServer({ sentinelConfig: config });
  } catch (e) {
    await master.stop();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const stop = async () => {
    await sentinel.stop();
    await master.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  const admin = new Redis(sentinel.url, { maxRetriesPerRequest: 1 });
  try {
    await eventually(
      async () => {
        const addr = (await admin.call("SENTINEL", "GET-MASTER-ADDR-BY-NAME", masterName)) as string[] | null;
        return addr?.[1] === String(master.port);
      },
      READY_TIMEOUT_MS,
      "the Sentinel to name the master",
    );
  } catch (e) {
    await stop();
    throw e;
  } finally {
    admin.disconnect();
  }
  return { master, sentinel, masterName, stop };
}
