/**
 * The Redis store on the other deployments it supports: a real Redis Cluster
 * (three masters) and a master behind a Sentinel, each started by this file
 * from the machine's redis-server. The whole store contract runs on both, and
 * on the Cluster the write coalescing (src/store/write-coalescing.ts) is
 * checked across nodes: one turn's commands reach every master they belong to,
 * in one read per master.
 */
import { Cluster, Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { silentLogger } from "../../src/log.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis-store.js";
import { freePort } from "../harness/redis-server.js";
import {
  type RedisClusterHandle,
  type RedisSentinelHandle,
  startRedisCluster,
  startRedisSentinel,
} from "../harness/redis-topologies.js";
import { uniquePrefix } from "../harness/redis-url.js";
import { type ContractSubject, redisRaw, storeContract } from "./contract.js";

let cluster: RedisClusterHandle;
let sentinel: RedisSentinelHandle;
beforeAll(async () => {
  [cluster, sentinel] = await Promise.all([startRedisCluster(3), startRedisSentinel()]);
});
afterAll(async () => {
  await Promise.all([cluster?.stop(), sentinel?.stop()]);
});

storeContract("RedisStore on a Redis Cluster", {
  approximateTrim: true,
  hasClock: false,
  async factory(): Promise<ContractSubject> {
    const keyPrefix = uniquePrefix();
    const store = createRedisStore({ mode: "cluster", nodes: cluster.seeds }, { keyPrefix, logger: silentLogger() });
    await store.waitUntilReady();
    const client = new Cluster([...cluster.seeds]);
    return {
      store,
      keys: store.keys,
      raw: redisRaw(client),
      async unreachableStore() {
        const port = await freePort(); // nothing listens there
        return createRedisStore(
          { mode: "cluster", nodes: [{ host: "127.0.0.1", port }] },
          { keyPrefix, logger: silentLogger() },
        );
      },
      async cleanup() {
        await store.close();
        await client.quit();
      },
    };
  },
});

storeContract("RedisStore through Sentinel", {
  approximateTrim: true,
  hasClock: false,
  async factory(): Promise<ContractSubject> {
    const keyPrefix = uniquePrefix();
    const options = {
      mode: "sentinel" as const,
      sentinels: [{ host: "127.0.0.1", port: sentinel.sentinel.port }],
      masterName: sentinel.masterName,
    };
    const store = createRedisStore(options, { keyPrefix, logger: silentLogger() });
    await store.waitUntilReady();
    const client = new Redis(sentinel.master.url);
    return {
      store,
      keys: store.keys,
      raw: redisRaw(client),
      async unreachableStore() {
        const port = await freePort(); // no Sentinel listens there
        return createRedisStore(
          { ...options, sentinels: [{ host: "127.0.0.1", port }] },
          { keyPrefix, logger: silentLogger() },
        );
      },
      async cleanup() {
        await store.close();
        await client.quit();
      },
    };
  },
});

describe("write coalescing on a Redis Cluster", () => {
  let store: RedisStore;
  let observers: Redis[];
  beforeAll(async () => {
    store = createRedisStore(
      { mode: "cluster", nodes: cluster.seeds },
      { keyPrefix: uniquePrefix(), logger: silentLogger() },
    );
    await store.waitUntilReady();
    observers = cluster.nodes.map((n) => new Redis(n.url, { maxRetriesPerRequest: 1 }));
  });
  afterAll(async () => {
    for (const o of observers ?? []) o.disconnect();
    await store?.close();
  });

  /** Socket reads each master has done so far (its INFO's own read included). */
  const reads = () =>
    Promise.all(observers.map(async (o) => Number(/total_reads_processed:(\d+)/.exec(await o.info("stats"))?.[1])));

  it("sends one turn's commands to every master they belong to, one write each, and every one lands", async () => {
    // Channels spread over the slots: each channel's keys share one hash tag, so one master.
    const channels = Array.from({ length: 60 }, (_, i) => `chan-${i}`);
    await store.ping(); // connections to every master are up before counting
    for (const channel of channels) await store.setMute(change(channel, "warm-up", false));

    const before = await reads();
    await Promise.all(channels.map((channel, i) => store.setMute(change(channel, "u", i % 2 === 0))));
    const after = await reads();

    const grew = after.map((n, i) => n - (before[i] ?? 0));
    // Each master: one read for its share of the 60 scripts, one for the INFO that counts them.
    expect(grew).toEqual(cluster.nodes.map(() => 2));
    for (const [i, channel] of channels.entries()) {
      expect(await store.getMuteState("p", channel)).toEqual({ "warm-up": false, u: i % 2 === 0 });
      expect(await store.getMuteEvents("p", channel, 10)).toHaveLength(2);
    }
  });
});

function change(channel: string, uid: string, mute: boolean) {
  return { project: "p", channel, uid, mute, by: "sub", at: 1 };
}
