/**
 * The Redis store on the other deployments it supports: a real Redis Cluster
 * (three masters) and a master behind a Sentinel, each started by this file
 * from the machine's redis-server. The whole store contract runs on both, and
 * on the Cluster the write coalescing (src/store/redis/write-coalescing.ts) is
 * checked across nodes: one turn's commands reach every master they belong to,
 * in one read per master. Last, the real process (`node dist/src/main.js`)
 * configured with REDIS_CLUSTER_NODES, then with REDIS_SENTINELS, serves a mute
 * over JSON and over gRPC into that deployment.
 */
import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Cluster, Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PstnService } from "../../gen/channel/v1/pstn_pb.js";
import { mintToken } from "../../src/auth/jwt.js";
import { silentLogger } from "../../src/log.js";
import { clusterSlot } from "../../src/store/redis/cluster-slot.js";
import { createRedisStore, type RedisConnectionOptions, type RedisStore } from "../../src/store/redis/store.js";
import { eventually } from "../harness/eventually.js";
import { startMainProcess } from "../harness/main-process.js";
import {
  type RedisClusterHandle,
  type RedisSentinelHandle,
  startRedisCluster,
  startRedisSentinel,
} from "../harness/redis-topologies.js";
import { uniquePrefix } from "../harness/redis-url.js";
import { redisSubject, storeContract } from "./contract.js";

let cluster: RedisClusterHandle;
let sentinel: RedisSentinelHandle;
beforeAll(async () => {
  [cluster, sentinel] = await Promise.all([startRedisCluster(3), startRedisSentinel()]);
});
afterAll(async () => {
  await Promise.all([cluster?.stop(), sentinel?.stop()]);
});

const clusterConnection = (): RedisConnectionOptions => ({ mode: "cluster", nodes: cluster.seeds });
const sentinelConnection = (port = sentinel.sentinel.port): RedisConnectionOptions => ({
  mode: "sentinel",
  sentinels: [{ host: "127.0.0.1", port }],
  masterName: sentinel.masterName,
});

storeContract("RedisStore on a Redis Cluster", {
  approximateTrim: true,
  hasClock: false,
  factory: () =>
    redisSubject({
      connection: clusterConnection(),
      unreachable: (port) => ({ mode: "cluster", nodes: [{ host: "127.0.0.1", port }] }),
      client: new Cluster([...cluster.seeds]),
    }),
});

storeContract("RedisStore through Sentinel", {
  approximateTrim: true,
  hasClock: false,
  factory: () =>
    redisSubject({
      connection: sentinelConnection(),
      unreachable: (port) => sentinelConnection(port), // no Sentinel listens there
      client: new Redis(sentinel.master.url),
    }),
});

describe("write coalescing on a Redis Cluster", () => {
  let store: RedisStore;
  let observers: Redis[];
  beforeAll(async () => {
    store = createRedisStore(clusterConnection(), { keyPrefix: uniquePrefix(), logger: silentLogger() });
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

describe("the slot of a shard channel (for the sharded subscriber)", () => {
  it("clusterSlot agrees with CLUSTER KEYSLOT, hash tags and all", async () => {
    const admin = new Redis(cluster.nodes[0]?.url ?? "");
    try {
      const names = [
        "bl:chan:{acme/weekly sync}:pstn-notify",
        "bl:chan:{p/c}:pstn-events",
        "no tag at all",
        "{}empty tag",
        "{unclosed",
        "two {a}{b}",
        "ünïcödé {頻道}",
        "",
      ];
      for (const name of names)
        expect(clusterSlot(name), name).toBe(Number(await admin.call("CLUSTER", "KEYSLOT", name)));
    } finally {
      admin.disconnect();
    }
  });
});

function change(channel: string, uid: string, mute: boolean) {
  return { project: "p", channel, uid, mute, by: "sub", at: 1 };
}

describe("the service on a Cluster and through Sentinel", () => {
  const secret = "topologies-test-secret-0123456789abcdef";

  const deployments: Array<[string, () => Record<string, string>, () => RedisConnectionOptions]> = [
    [
      "REDIS_CLUSTER_NODES",
      () => ({ REDIS_CLUSTER_NODES: cluster.seeds.map((n) => `${n.host}:${n.port}`).join(",") }),
      clusterConnection,
    ],
    [
      "REDIS_SENTINELS",
      () => ({ REDIS_SENTINELS: `127.0.0.1:${sentinel.sentinel.port}`, REDIS_SENTINEL_NAME: sentinel.masterName }),
      () => sentinelConnection(),
    ],
  ];

  it.each(deployments)(
    "with %s: ready, and a mute over JSON and over gRPC lands in Redis",
    async (_, env, connection) => {
      const prefix = uniquePrefix("topo");
      const store = createRedisStore(connection(), { keyPrefix: prefix, logger: silentLogger() });
      await store.waitUntilReady();
      let proc: ChildProcess | undefined;
      try {
        await store.createChannel({ project: "p", channel: "c", hostPassphrase: "host pass" });
        const started = await startMainProcess({
          ...env(),
          NODE_ENV: "production",
          LOG_LEVEL: "info",
          REDIS_KEY_PREFIX: prefix,
          JWT_SECRET: secret,
        });
        proc = started.proc;
        const port = started.port;
        const base = `http://127.0.0.1:${port}`;
        // Listening comes first; /readyz turns 200 once the store answers (as an orchestrator would wait).
        await eventually(async () => (await fetch(`${base}/readyz`)).status === 200, 5_000, "/readyz to answer 200");
        const token = await mintToken({
          secret: new TextEncoder().encode(secret),
          project: "p",
          subject: "s",
          ttlSeconds: 60,
        });

        const json = await fetch(`${base}/v1/channel/pstn/mute`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ uid: "by-json", passphrase: "host pass", mute: true }),
        });
        expect(json.status).toBe(200);
        expect(await json.json()).toEqual({ uid: "by-json", mute: true });

        const grpc = createClient(PstnService, createGrpcTransport({ baseUrl: base }));
        const answer = await grpc.mute(
          { uid: "by-grpc", passphrase: "host pass", mute: true },
          { headers: { authorization: `Bearer ${token}` } },
        );
        expect({ uid: answer.uid, mute: answer.mute }).toEqual({ uid: "by-grpc", mute: true });

        expect(await store.getMuteState("p", "c")).toEqual({ "by-json": true, "by-grpc": true });
        expect(await store.getMuteEvents("p", "c", 10)).toHaveLength(2);
        proc.kill("SIGTERM");
        const [code] = (await once(proc, "exit")) as [number | null];
        expect(code).toBe(0);
      } finally {
        proc?.kill("SIGKILL");
        await store.close();
      }
    },
  );
});
