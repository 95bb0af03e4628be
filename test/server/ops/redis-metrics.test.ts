/**
 * The Redis series move through a real server on a real Redis: each command's
 * time by family, failed commands by kind, reconnections and the subscriber's
 * re-subscriptions after a network cut (a proxy between boardline and Redis),
 * and the REDIS_MIN_REPLICAS WAITs (a primary with one replica).
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { RedisStore } from "../../../src/store/redis/store.js";
import { type Boardline, startBoardline } from "../../harness/boardline.js";
import { eventually } from "../../harness/eventually.js";
import { type GatedProxy, startGatedProxy } from "../../harness/gated-proxy.js";
import { postJson } from "../../harness/http.js";
import { readSeries } from "../../harness/metrics-scrape.js";
import { type ReplicaSetHandle, startReplicaSet } from "../../harness/redis-replicated.js";
import { redisUrl } from "../../harness/redis-url.js";
import { openSse } from "../../harness/sse.js";
import { muteBody } from "../../harness/request-bodies.js";
import { ROUTES } from "../../harness/routes.js";

describe("on the shared Redis", () => {
  let bl: Boardline;
  beforeAll(async () => {
    bl = await startBoardline();
  });
  afterAll(async () => {
    await bl.close();
  });

  test("a mute's commands are timed under the families mute and channel", async () => {
    const family = (f: string) => readSeries(bl.url, "boardline_redis_command_duration_seconds_count", { family: f });
    const [mute, channel] = [await family("mute"), await family("channel")];
    expect((await postJson(bl, ROUTES.mute, muteBody(bl))).status).toBe(200);
    expect(await family("mute")).toBe(mute + 1);
    expect(await family("channel")).toBeGreaterThan(channel);
  });

  test("a command Redis refuses (a key of the wrong type) is counted by kind", async () => {
    const { world } = bl;
    const key = (bl.store as RedisStore).keys.channelKeys(world.otherProject, world.otherChannel).mute;
    const redis = new Redis(redisUrl());
    // Redis 7 passes a script's WRONGTYPE on as it is (older servers wrapped it as the script's error).
    const refused = () => readSeries(bl.url, "boardline_redis_errors_total", { kind: "wrong_type" });
    try {
      await redis.set(key, "not a hash");
      const before = await refused();
      const res = await postJson(
        bl,
        ROUTES.mute,
        { uid: "u-1", passphrase: world.otherHostPassphrase, mute: true },
        {
          token: await bl.token(world.otherProject),
        },
      );
      expect(res.status).toBe(503);
      expect(await refused()).toBe(before + 1);
    } finally {
      await redis.del(key);
      redis.disconnect();
    }
  });
});

describe("behind a proxy that cuts the connections", () => {
  let proxy: GatedProxy;
  let bl: Boardline;
  beforeAll(async () => {
    proxy = await startGatedProxy(Number(new URL(redisUrl()).port));
    bl = await startBoardline({ redisUrl: proxy.url });
  });
  afterAll(async () => {
    await bl.close();
    await proxy.close();
  });

  test("a cut counts a reconnection, and the watched channels subscribed again", async () => {
    const watch = await openSse(`${bl.url}/v1/channel/pstn/events:watch`, {
      token: await bl.gatewayToken(),
      body: { channel_ids: [bl.world.channel] },
    });
    try {
      expect(watch.status).toBe(200);
      // The watch's subscription is made once the stream is established: a mute reaches it then.
      await postJson(bl, ROUTES.mute, muteBody(bl));
      await watch.next();
      const reconnects = await readSeries(bl.url, "boardline_redis_reconnects_total");
      const resubscribed = await readSeries(bl.url, "boardline_redis_resubscriptions_total");
      proxy.cut();
      await eventually(
        async () => (await readSeries(bl.url, "boardline_redis_reconnects_total")) > reconnects,
        5_000,
        "a reconnection counted",
      );
      await eventually(
        async () => (await readSeries(bl.url, "boardline_redis_resubscriptions_total")) > resubscribed,
        5_000,
        "a re-subscription counted",
      );
    } finally {
      watch.close();
    }
  });
});

describe("with REDIS_MIN_REPLICAS", () => {
  let replicas: ReplicaSetHandle;
  let bl: Boardline;
  beforeAll(async () => {
    replicas = await startReplicaSet(1);
    bl = await startBoardline({ redisUrl: replicas.primary.url, replicaAck: { minReplicas: 1, timeoutMs: 500 } });
  }, 30_000);
  afterAll(async () => {
    await bl?.close();
    await replicas?.stop();
  });

  test("a mute's WAIT is counted ok", async () => {
    const before = await readSeries(bl.url, "boardline_redis_replica_waits_total", { outcome: "ok" });
    expect((await postJson(bl, ROUTES.mute, muteBody(bl))).status).toBe(200);
    expect(await readSeries(bl.url, "boardline_redis_replica_waits_total", { outcome: "ok" })).toBe(before + 1);
    expect(await readSeries(bl.url, "boardline_redis_replica_waits_total", { outcome: "failed" })).toBe(0);
  });

  test("with the replica gone, a mute's WAIT fails, and is counted failed", async () => {
    await replicas.replicas[0]?.stop();
    const before = await readSeries(bl.url, "boardline_redis_replica_waits_total", { outcome: "failed" });
    expect((await postJson(bl, ROUTES.mute, muteBody(bl))).status).toBe(503);
    expect(await readSeries(bl.url, "boardline_redis_replica_waits_total", { outcome: "failed" })).toBe(before + 1);
  }, 15_000);
});
