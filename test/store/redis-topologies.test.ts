/**
 * The Redis store on the other deployments it supports: a real Redis Cluster
 * (three masters) and a master behind a Sentinel, each started by this file
 * from the machine's redis-server. The whole store contract runs on both, and
 * on the Cluster the write coalescing (src/store/write-coalescing.ts) is
 * checked across nodes: one turn's commands reach every master they belong to,
 * in one read per master. Last, the real process (`node dist/src/main.js`)
 * configured with REDIS_CLUSTER_NODES, then with REDIS_SENTINELS, serves a mute
 * over JSON and over gRPC into that deployment.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import http2 from "node:http2";
import { create, toBinary } from "@bufbuild/protobuf";
import { Cluster, Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MuteRequestSchema } from "../../gen/channel/v1/pstn_pb.js";
import { mintToken } from "../../src/auth/jwt.js";
import { silentLogger } from "../../src/log.js";
import type { RedisConnectionOptions } from "../../src/store/redis-connection.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis-store.js";
import { ROOT } from "../harness/build-dist.js";
import { eventually } from "../harness/eventually.js";
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

describe("the service on a Cluster and through Sentinel", () => {
  const secret = "topologies-test-secret-0123456789abcdef";
  let child: ChildProcess | undefined;
  afterAll(() => {
    child?.kill("SIGKILL");
  });

  const deployments: Array<[string, () => Record<string, string>, () => RedisConnectionOptions]> = [
    [
      "REDIS_CLUSTER_NODES",
      () => ({ REDIS_CLUSTER_NODES: cluster.seeds.map((n) => `${n.host}:${n.port}`).join(",") }),
      () => ({ mode: "cluster", nodes: cluster.seeds }),
    ],
    [
      "REDIS_SENTINELS",
      () => ({ REDIS_SENTINELS: `127.0.0.1:${sentinel.sentinel.port}`, REDIS_SENTINEL_NAME: sentinel.masterName }),
      () => ({
        mode: "sentinel",
        sentinels: [{ host: "127.0.0.1", port: sentinel.sentinel.port }],
        masterName: sentinel.masterName,
      }),
    ],
  ];

  it.each(deployments)(
    "with %s: ready, and a mute over JSON and over gRPC lands in Redis",
    async (_, env, connection) => {
      const prefix = uniquePrefix("topo");
      const store = createRedisStore(connection(), { keyPrefix: prefix, logger: silentLogger() });
      await store.waitUntilReady();
      try {
        await store.createChannel({ project: "p", channel: "c", hostPassphrase: "host pass" });
        const { port, proc } = await startProcess({ ...env(), REDIS_KEY_PREFIX: prefix, JWT_SECRET: secret });
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

        const status = await grpcMute(
          base,
          token,
          create(MuteRequestSchema, { uid: "by-grpc", passphrase: "host pass", mute: true }),
        );
        expect(status).toBe("0");

        expect(await store.getMuteState("p", "c")).toEqual({ "by-json": true, "by-grpc": true });
        expect(await store.getMuteEvents("p", "c", 10)).toHaveLength(2);
        proc.kill("SIGTERM");
        const [code] = (await once(proc, "exit")) as [number | null];
        expect(code).toBe(0);
      } finally {
        child?.kill("SIGKILL");
        await store.close();
      }
    },
  );

  async function startProcess(env: Record<string, string>): Promise<{ port: number; proc: ChildProcess }> {
    const proc = spawn(process.execPath, ["dist/src/main.js"], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? "",
        NODE_ENV: "production",
        PORT: "0",
        HOST: "127.0.0.1",
        LOG_LEVEL: "info",
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child = proc;
    let out = "";
    proc.stderr?.on("data", (d) => {
      out += String(d);
    });
    const port = await new Promise<number>((resolve, reject) => {
      proc.stdout?.on("data", (d) => {
        out += String(d);
        const m = /"url":"http:\/\/127\.0\.0\.1:(\d+)"/.exec(out);
        if (m) resolve(Number(m[1]));
      });
      proc.once("exit", () => reject(new Error(`exited early: ${out}`)));
    });
    return { port, proc };
  }
});

/** One unary gRPC Mute over h2c; resolves the grpc-status trailer. */
function grpcMute(
  base: string,
  token: string,
  request: Parameters<typeof toBinary<typeof MuteRequestSchema>>[1],
): Promise<string> {
  const message = toBinary(MuteRequestSchema, request);
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  const session = http2.connect(base);
  return new Promise<string>((resolve, reject) => {
    const req = session.request({
      ":method": "POST",
      ":path": "/channel.v1.PstnService/Mute",
      "content-type": "application/grpc",
      te: "trailers",
      authorization: `Bearer ${token}`,
    });
    req.on("trailers", (t) => resolve(String(t["grpc-status"])));
    req.on("response", (h) => {
      if (h["grpc-status"] !== undefined) resolve(String(h["grpc-status"]));
    });
    req.on("error", reject);
    req.resume();
    req.end(frame);
  }).finally(() => session.close());
}
