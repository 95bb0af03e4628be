/**
 * Which connection a command goes on, where that matters: a write that is
 * followed by WAIT (replica-ack.ts) must go on the very connection the WAIT
 * goes on, and readiness asks every master of a Cluster, not one at random.
 *
 * On a Cluster, ioredis keeps one connection per node and a slot table (slot
 * → master first). Those node connections queue commands while they are down
 * and connect only on first use, so they are checked and connected here
 * before anything is sent on them. When the slot table names a master that is
 * gone (a failover), the table is refreshed, so the next call finds the new one.
 */
import { Cluster, Command, type Redis } from "ioredis";
import type { RedisClient } from "./connection.js";

/**
 * The connection a write to `key` is sent on: the client's own (one node,
 * Sentinel), or the connection to the master the slot table names for the
 * key's slot (Cluster), connected and ready. Throws when there is none.
 */
export async function connectionFor(client: RedisClient, key: string): Promise<Redis> {
  if (!(client instanceof Cluster)) return client;
  const slot = new Command("get", [key]).getSlot();
  const master = client.slots[slot]?.[0];
  const node = master === undefined ? undefined : nodeByKey(client, master);
  if (node === undefined) {
    client.refreshSlotsCache();
    throw new Error(`no known master serves slot ${slot}`);
  }
  await ready(client, node);
  return node;
}

/**
 * After a command on `connectionFor`'s connection failed: an answer saying the
 * node no longer serves the slot as master (a redirection, a read-only
 * replica, a cluster in failover) makes a Cluster refresh its slot table.
 */
export function noteFailure(client: RedisClient, error: unknown): void {
  if (!(client instanceof Cluster) || !(error instanceof Error)) return;
  if (/^(MOVED|ASK|CLUSTERDOWN|TRYAGAIN|READONLY)\b|replica instances/.test(error.message)) client.refreshSlotsCache();
}

/** PING on the one connection, or on the connection to every master of a Cluster (all must answer). */
export async function pingMasters(client: RedisClient): Promise<void> {
  if (!(client instanceof Cluster)) {
    await client.ping();
    return;
  }
  if (client.status !== "ready") throw new Error(`the cluster is ${client.status}`);
  const masters = new Set(client.slots.map((nodes) => nodes[0]));
  if (masters.has(undefined)) throw new Error("some slots have no master");
  await Promise.all(
    [...masters].map(async (key) => {
      const node = key === undefined ? undefined : nodeByKey(client, key);
      if (node === undefined) throw new Error(`no connection to master ${key}`);
      await ready(client, node);
      await node.ping();
    }),
  );
}

/**
 * Throws unless `node` is ready, after connecting it if it never was (ioredis
 * connects node connections lazily) or waiting for a connection under way. A
 * node that is down makes the cluster refresh its slot table: after a
 * failover it names the promoted replica.
 */
async function ready(cluster: Cluster, node: Redis): Promise<void> {
  if (node.status === "wait" || node.status === "connecting" || node.status === "connect") {
    const settled = settles(node);
    if (node.status === "wait") node.connect().catch(() => undefined);
    await settled;
  }
  if (node.status !== "ready") {
    cluster.refreshSlotsCache();
    throw new Error(`the connection to ${node.options.host}:${node.options.port} is ${node.status}`);
  }
}

/** Resolves at the connection's next "ready", "error" or "close" (its connect timeout bounds the wait). */
function settles(node: Redis): Promise<void> {
  const events = ["ready", "error", "close"] as const;
  return new Promise((resolve) => {
    const done = () => {
      for (const event of events) node.off(event, done);
      resolve();
    };
    for (const event of events) node.once(event, done);
  });
}

/**
 * `define` (e.g. defining the Lua scripts) run once per connection — a
 * Cluster node's own connection included, which a write with WAIT goes on —
 * and its result remembered.
 */
export function perConnection<T>(define: (client: RedisClient) => T): (client: RedisClient) => T {
  const defined = new WeakMap<RedisClient, T>();
  return (client) => {
    let value = defined.get(client);
    if (value === undefined) {
      value = define(client);
      defined.set(client, value);
    }
    return value;
  };
}

/** ioredis names nodes `host:port` in its slot table. */
function nodeByKey(cluster: Cluster, key: string): Redis | undefined {
  return cluster.nodes("all").find((n) => `${n.options.host}:${n.options.port}` === key);
}
