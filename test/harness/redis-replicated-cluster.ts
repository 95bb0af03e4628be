/**
 * A Redis Cluster with a replica per master, for failover tests: from the
 * machine's `redis-server` on free loopback ports, each node in a directory of
 * its own (see ./redis-replicated.ts), with a short cluster-node-timeout so a
 * replica takes over about 1.5 s after its master stops answering, whatever
 * its replication lag (cluster-replica-validity-factor 0). `stop()` stops every
 * node (replicas added later included) and removes the temporary directory.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eventually } from "./eventually.js";
import { HOST, linkUp, nodeArgs, READY_TIMEOUT_MS, withClient } from "./redis-replicated.js";
import { type RedisServerHandle, startRedisServer } from "./redis-server.js";

const SLOTS = 16_384;
export const CLUSTER_NODE_TIMEOUT_MS = 1500;

export interface ReplicatedClusterHandle {
  /** The masters the cluster started with, in slot order; `replicas[i]` replicates `masters[i]`. */
  readonly masters: readonly RedisServerHandle[];
  readonly replicas: readonly RedisServerHandle[];
  /** Seed nodes for a cluster client: every master. */
  readonly seeds: ReadonlyArray<{ host: string; port: number }>;
  /** The port of the node serving `key`'s slot as master now, asked of the nodes still up. */
  masterOf(key: string): Promise<number | undefined>;
  /** Starts one more cluster node, makes it a replica of the master on `ofPort`, and waits until it has synced. */
  addReplica(ofPort: number): Promise<RedisServerHandle>;
  stop(): Promise<void>;
}

/** Starts `size` masters sharing the slots and a replica of each, and waits until every node agrees. */
export async function startReplicatedCluster(size = 3): Promise<ReplicatedClusterHandle> {
  const dir = mkdtempSync(join(tmpdir(), "bl-cluster-replicas-"));
  const nodes: RedisServerHandle[] = [];
  const startNode = async () => {
    const args = [...nodeArgs(dir, nodes.length), "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"];
    const timing = [
      "--cluster-node-timeout",
      String(CLUSTER_NODE_TIMEOUT_MS),
      "--cluster-replica-validity-factor",
      "0",
    ];
    const node = await startRedisServer({ args: [...args, ...timing] });
    nodes.push(node);
    return node;
  };
  const stop = async () => {
    await Promise.all(nodes.map((n) => n.stop()));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const masters: RedisServerHandle[] = [];
    for (let i = 0; i < size; i++) masters.push(await startNode());
    const per = Math.ceil(SLOTS / size);
    for (const [i, master] of masters.entries()) {
      const slots = Array.from({ length: Math.min(SLOTS, (i + 1) * per) - i * per }, (_, k) => String(i * per + k));
      await withClient(master.port, (c) => c.call("CLUSTER", "ADDSLOTS", ...slots));
    }
    const replicas: RedisServerHandle[] = [];
    for (let i = 0; i < size; i++) replicas.push(await startNode());
    const first = masters[0];
    if (first === undefined) throw new Error("a cluster needs a master");
    await withClient(first.port, async (c) => {
      for (const node of nodes.slice(1)) await c.call("CLUSTER", "MEET", HOST, String(node.port));
    });
    await Promise.all(replicas.map((r, i) => replicate(r.port, masters[i]?.port ?? 0)));
    await clusterAgrees(nodes, 2 * size);
    const masterOf = (key: string) => slotMaster(nodes, key);
    const addReplica = async (ofPort: number) => {
      const replica = await startNode();
      await withClient(replica.port, (c) => c.call("CLUSTER", "MEET", HOST, String(ofPort)));
      await replicate(replica.port, ofPort);
      return replica;
    };
    const seeds = masters.map((m) => ({ host: HOST, port: m.port }));
    return { masters, replicas, seeds, masterOf, addReplica, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** Makes the node on `port` a replica of the master on `masterPort` (once it knows it), and waits for the sync. */
async function replicate(port: number, masterPort: number): Promise<void> {
  const id = String(await withClient(masterPort, (m) => m.call("CLUSTER", "MYID")));
  await withClient(port, (r) =>
    eventually(
      async () => {
        if (!String(await r.call("CLUSTER", "NODES")).includes(id)) return false;
        await r.call("CLUSTER", "REPLICATE", id);
        return true;
      },
      READY_TIMEOUT_MS,
      `the node on ${port} to learn of its master`,
    ),
  );
  await linkUp(port);
}

/** Every node sees all `count` nodes and a cluster that serves every slot. */
async function clusterAgrees(nodes: readonly RedisServerHandle[], count: number): Promise<void> {
  for (const node of nodes) {
    await withClient(node.port, (c) =>
      eventually(
        async () => {
          const info = String(await c.call("CLUSTER", "INFO"));
          return info.includes("cluster_state:ok") && info.includes(`cluster_known_nodes:${count}`);
        },
        READY_TIMEOUT_MS,
        `the node on ${node.port} to see the whole cluster`,
      ),
    );
  }
}

/** CLUSTER SLOTS of the first node that answers: the master port of `key`'s slot. */
async function slotMaster(nodes: readonly RedisServerHandle[], key: string): Promise<number | undefined> {
  for (const node of nodes) {
    try {
      return await withClient(node.port, async (c) => {
        const slot = Number(await c.call("CLUSTER", "KEYSLOT", key));
        const ranges = (await c.call("CLUSTER", "SLOTS")) as Array<[number, number, [string, number]]>;
        return ranges.find(([from, to]) => from <= slot && slot <= to)?.[2][1];
      });
    } catch {
      // Down: ask the next.
    }
  }
  return undefined;
}
