/**
 * WatchPstnEvents on a 3-master Redis Cluster: the watched channels live in
 * slots of every master, so one subscriber connection per master carries
 * their notifications (sharded pub/sub), and a watch of all of them gets
 * every event while 8 writers mute — also when every master's subscriber
 * connection is killed (CLIENT KILL TYPE pubsub) during the run.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, test } from "vitest";
import { clusterSlot } from "../../src/store/redis/cluster-slot.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { eventually } from "../harness/eventually.js";
import { type RedisClusterHandle, startRedisCluster } from "../harness/redis-topologies.js";
import {
  connectWatcher,
  expectDelivered,
  grpcJsWatcher,
  hasAll,
  muteConcurrently,
  sseWatcher,
  type Watcher,
} from "./pstn-watch-collect.js";

let cluster: RedisClusterHandle;
let bl: Boardline;
let masters: Redis[];
beforeAll(async () => {
  cluster = await startRedisCluster(3);
  bl = await startBoardline({
    store: "redis",
    connection: { mode: "cluster", nodes: cluster.seeds },
    pstnWatch: { sweepMs: 3_600_000 }, // deliveries come from notifications and re-reads only
  });
  masters = cluster.nodes.map((n) => new Redis(n.url, { maxRetriesPerRequest: 1 }));
}, 60_000);
afterAll(async () => {
  for (const m of masters ?? []) m.disconnect();
  await bl?.close();
  await cluster?.stop();
});

/** Six fresh channels, two in the slots of each master. */
async function channelsOnEveryMaster(): Promise<Map<string, string>> {
  const hosts = new Map<string, string>();
  const perMaster = [0, 0, 0];
  while (hosts.size < 6) {
    const channel = `room-${randomBytes(4).toString("hex")}`;
    const master = Math.floor(clusterSlot(`bl:chan:{${bl.world.project}/${channel}}`) / Math.ceil(16_384 / 3));
    if ((perMaster[master] ?? 0) >= 2) continue;
    perMaster[master] = (perMaster[master] ?? 0) + 1;
    const host = `host ${channel}`;
    await bl.store.createChannel({ project: bl.world.project, channel, hostPassphrase: host });
    hosts.set(channel, host);
  }
  return hosts;
}

test("a watch of channels on every master gets every event, also when every subscriber connection is killed", async () => {
  const hosts = await channelsOnEveryMaster();
  const channels = [...hosts.keys()];
  const watchers: Watcher[] = [
    await sseWatcher(bl, "SSE, all six channels", channels, { after: "0-0" }),
    await grpcJsWatcher(bl, "grpc-js, three channels", channels.slice(0, 3), "0-0"),
    await connectWatcher(bl, "connect-es, one channel", channels.slice(5), "0-0"),
  ];
  let kills = 0;
  const { acknowledged, refused } = await muteConcurrently(bl, hosts, {
    writers: 8,
    perWriter: 30,
    during: async (done) => {
      if (done % 60 !== 0) return;
      for (const m of masters) kills += Number(await m.call("CLIENT", "KILL", "TYPE", "pubsub"));
    },
  });
  expect(refused).toBe(0);
  expect(acknowledged.size).toBe(240);
  expect(kills).toBeGreaterThanOrEqual(6);
  await eventually(
    async () => (await Promise.all(watchers.map((w) => hasAll(bl, w)))).every(Boolean),
    10_000,
    "every watcher to have every event",
  );
  for (const w of watchers) await expectDelivered(bl, w, { exactly: false });
  for (const w of watchers) w.stop();
}, 60_000);

test("one subscriber connection per master, however many watches and channels", async () => {
  const hosts = await channelsOnEveryMaster();
  const channels = [...hosts.keys()];
  const watchers = await Promise.all(
    Array.from({ length: 5 }, (_, i) => sseWatcher(bl, `SSE ${i}`, channels, { after: "0-0" })),
  );
  const subscribers = async () => {
    let n = 0;
    for (const m of masters) {
      const list = String(await m.call("CLIENT", "LIST", "TYPE", "pubsub"));
      n += list.split("\n").filter((l) => l.includes("name=boardline-notify")).length;
    }
    return n;
  };
  expect(await subscribers()).toBe(3);
  for (const w of watchers) w.stop();
});
