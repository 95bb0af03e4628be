/**
 * WatchPstnEvents loses nothing: 8 writers mute concurrently over the JSON
 * route while watchers on every protocol watch; every event the store kept —
 * every acknowledged mute among them — reaches every watcher, in order per
 * channel; a watcher killed halfway and resumed from its last cursor gets the
 * rest; the subscriber connection killed (CLIENT KILL TYPE pubsub) over and
 * over misses nothing; and a Redis SIGKILLed and restarted from its
 * append-only file during the watch loses nothing it kept.
 *
 * The sweep (a safety net that reads every watched channel every 10 s) is
 * turned off here: what is delivered comes from notifications and from the
 * re-reads after the subscriber reconnects. Each suite has a redis-server of
 * its own, so killing its clients touches no other test file.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { eventually } from "../harness/eventually.js";
import { type RedisServerHandle, startRedisServer } from "../harness/redis-server.js";
import {
  connectWatcher,
  expectDelivered,
  grpcJsWatcher,
  hasAll,
  kept,
  muteConcurrently,
  sseWatcher,
  type Watcher,
} from "./pstn-watch-collect.js";

const NO_SWEEP = { sweepMs: 3_600_000 };

let redis: RedisServerHandle;
let bl: Boardline;
let admin: Redis;
beforeAll(async () => {
  redis = await startRedisServer({ durable: true });
  bl = await startBoardline({ store: "redis", redisUrl: redis.url, pstnWatch: NO_SWEEP });
  admin = new Redis(redis.url, { maxRetriesPerRequest: 1, retryStrategy: () => 100 });
  admin.on("error", () => {});
}, 30_000);
afterAll(async () => {
  admin?.disconnect();
  await bl?.close();
  await redis?.stop();
});

/** Four fresh channels of the world's project, each with a host passphrase. */
async function freshChannels(): Promise<Map<string, string>> {
  const hosts = new Map<string, string>();
  for (let i = 0; i < 4; i++) {
    const channel = `room-${i}-${randomBytes(4).toString("hex")}`;
    const host = `host ${channel}`;
    await bl.store.createChannel({ project: bl.world.project, channel, hostPassphrase: host });
    hosts.set(channel, host);
  }
  return hosts;
}

async function watchersOn(channels: string[]): Promise<Watcher[]> {
  return [
    await sseWatcher(bl, "SSE, all channels", channels, { after: "0-0" }),
    await sseWatcher(bl, "SSE, one channel", channels.slice(0, 1), { after: "0-0" }),
    await grpcJsWatcher(bl, "grpc-js, three channels", channels.slice(1), "0-0"),
    await connectWatcher(bl, "connect-es gRPC, all channels", channels, "0-0"),
  ];
}

async function everyWatcherHasAll(watchers: readonly Watcher[]): Promise<void> {
  await eventually(
    async () => (await Promise.all(watchers.map((w) => hasAll(bl, w)))).every(Boolean),
    10_000,
    "every watcher to have every kept event",
  );
}

test("8 writers, watchers on every protocol: every acknowledged mute reaches every watcher, in order; a killed watcher resumes", async () => {
  const hosts = await freshChannels();
  const channels = [...hosts.keys()];
  const watchers = await watchersOn(channels);
  const killed = await sseWatcher(bl, "SSE killed and resumed", channels, { after: "0-0" });
  let resumed: Watcher | undefined;
  const { acknowledged, refused } = await muteConcurrently(bl, hosts, {
    writers: 8,
    perWriter: 40,
    during: async (done) => {
      if (done !== 120) return;
      await eventually(() => killed.got.length > 0, 5_000, "the watcher to get something");
      killed.stop();
      const last = killed.got.at(-1);
      resumed = await sseWatcher(bl, "SSE killed and resumed", channels, {
        lastEventId: last?.cursor ?? "",
        got: [...killed.got],
      });
    },
  });
  expect(refused).toBe(0);
  expect(acknowledged.size).toBe(320);
  const all = [...watchers, resumed as Watcher];
  await everyWatcherHasAll(all);
  const keptUids = new Set((await Promise.all(channels.map((c) => kept(bl, c)))).flat().map((e) => e.uid));
  for (const uid of acknowledged) expect(keptUids.has(uid)).toBe(true);
  for (const w of watchers) await expectDelivered(bl, w, { exactly: true });
  await expectDelivered(bl, resumed as Watcher, { exactly: false });
  for (const w of all) w.stop();
}, 60_000);

test("the subscriber connection killed again and again (CLIENT KILL TYPE pubsub): nothing is missed", async () => {
  const hosts = await freshChannels();
  const watchers = await watchersOn([...hosts.keys()]);
  let kills = 0;
  const { refused } = await muteConcurrently(bl, hosts, {
    writers: 8,
    perWriter: 30,
    during: async (done) => {
      if (done % 40 !== 0) return;
      kills += Number(await admin.call("CLIENT", "KILL", "TYPE", "pubsub"));
    },
  });
  expect(refused).toBe(0);
  expect(kills).toBeGreaterThanOrEqual(3);
  await everyWatcherHasAll(watchers);
  for (const w of watchers) await expectDelivered(bl, w, { exactly: false });
  for (const w of watchers) w.stop();
}, 60_000);

describe("Redis SIGKILLed and restarted (append-only file) while watched", () => {
  test("every event Redis kept reaches every watcher, and every acknowledged mute is among them", async () => {
    const hosts = await freshChannels();
    const watchers = await watchersOn([...hosts.keys()]);
    let restarted = false;
    const { acknowledged, refused } = await muteConcurrently(bl, hosts, {
      writers: 8,
      perWriter: 40,
      during: async (done) => {
        if (done !== 100 || restarted) return;
        restarted = true;
        redis.kill("SIGKILL"); // the other writers meet the outage (503) meanwhile
        await redis.restart();
        await eventually(async () => (await fetch(`${bl.url}/readyz`)).status === 200, 10_000, "Redis to be back");
      },
    });
    expect(restarted).toBe(true);
    expect(acknowledged.size + refused).toBe(320);
    await everyWatcherHasAll(watchers);
    const keptUids = new Set((await Promise.all([...hosts.keys()].map((c) => kept(bl, c)))).flat().map((e) => e.uid));
    for (const uid of acknowledged) expect(keptUids.has(uid), uid).toBe(true);
    for (const w of watchers) await expectDelivered(bl, w, { exactly: false });
    for (const w of watchers) w.stop();
  }, 60_000);
});
