/**
 * The Sentinel-managed primary dies under load. A primary with one replica and
 * three Sentinels (quorum 2; test/harness/redis-replicated.ts), the real
 * boardline process configured with REDIS_SENTINELS, 8 writers muting over
 * JSON; the primary is SIGKILLed and the Sentinels promote the replica
 * (boardline's client follows +switch-master). Checked (failover-load.ts):
 * every answer is a 200 or the documented 503 within ANSWER_BOUND_MS, /readyz
 * turns 503 and back, writes are acknowledged again within RECOVERY_BOUND_MS.
 *
 * - REDIS_MIN_REPLICAS=1: the promoted replica has no replica of its own, so
 *   every mute answers 503 until a new replica has synced (asserted: none
 *   answered 200 in between), then 200 again; every mute answered 200 is on
 *   the new primary (asserted).
 * - REDIS_MIN_REPLICAS=0: writes are acknowledged again once the replica is
 *   promoted; how many acknowledged mutes the new primary lacks is reported
 *   (a figure, not a promise: asynchronous replication may lose the last ones).
 *
 * And a failover that leaves the old primary up (SENTINEL FAILOVER): it takes
 * writes until the Sentinels demote it, then resyncs from the new primary and
 * drops them; with REDIS_MIN_REPLICAS=1 none of those was acknowledged (its
 * replica left it first), and the writes follow the new primary.
 */
import { expect, test } from "vitest";
import { silentLogger } from "../../src/log.js";
import { createRedisStore } from "../../src/store/redis/store.js";
import { eventually } from "../harness/eventually.js";
import { type SentinelGroupHandle, startSentinelGroup, withClient } from "../harness/redis-replicated.js";
import { uniquePrefix } from "../harness/redis-url.js";
import { sleep } from "../harness/sleep.js";
import {
  type Boardline,
  expectDocumentedBehaviour,
  expectNoAckWhileAlone,
  figures,
  lostAcknowledged,
  seed,
  startBoardlineProcess,
  storedOn,
  underLoad,
  WORLD,
} from "./failover-load.js";

/** The Sentinels promote within this long of the kill (1 s down-after, then the vote and the promotion). */
const PROMOTION_BOUND_MS = 15_000;

test("REDIS_MIN_REPLICAS=1: a 200 survives the primary's death; 503 until the new primary has a replica", async () => {
  await failover(1, async (group, marks) => {
    await sleep(1500); // the new primary alone: every write answers 503 meanwhile
    const port = await group.masterPort();
    marks.attachingAt = Date.now();
    await group.addReplica(port ?? 0);
    marks.attachedAt = Date.now();
  });
}, 60_000);

test("REDIS_MIN_REPLICAS=0: writes resume once the replica is promoted; acknowledged mutes lost are reported", async () => {
  await failover(0, async () => {});
}, 60_000);

test("SENTINEL FAILOVER, the old primary still up: with REDIS_MIN_REPLICAS=1 every 200 is on the new primary", async () => {
  const group = await startSentinelGroup(1);
  const sentinels = group.sentinels.map((s) => ({ host: "127.0.0.1", port: s.port }));
  const connection = { mode: "sentinel" as const, sentinels, masterName: group.masterName };
  const replicaAck = { minReplicas: 1, timeoutMs: 300 };
  const store = createRedisStore(connection, { keyPrefix: uniquePrefix("switch"), logger: silentLogger(), replicaAck });
  const acknowledged: string[] = [];
  let switchedAt = Number.POSITIVE_INFINITY;
  const mute = async (uid: string) => {
    const change = { project: WORLD.project, channel: WORLD.channel, uid, mute: true, by: "s", at: 1 };
    if (
      await store.setMute(change).then(
        () => true,
        () => false,
      )
    )
      acknowledged.push(uid);
  };
  try {
    await store.waitUntilReady(10_000);
    // One writer, from before the failover until 1 s of writes after the Sentinels switched.
    const writer = async () => {
      for (let n = 0; Date.now() < switchedAt + 1000; n++) await mute(`m${n}`);
    };
    const failover = async () => {
      await sleep(300);
      await withClient(group.sentinels[0]?.port ?? 0, (s) => s.call("SENTINEL", "FAILOVER", group.masterName));
      const switched = async () => ((await group.masterPort()) ?? group.primary.port) !== group.primary.port;
      await eventually(switched, PROMOTION_BOUND_MS, "the Sentinels to switch the master");
      switchedAt = Date.now();
    };
    await Promise.all([writer(), failover()]);
    const late = acknowledged.length;
    const acknowledgedAgain = async () => {
      await mute("last");
      return acknowledged.length > late;
    };
    await eventually(acknowledgedAgain, 10_000, "writes on the new primary");
    const stored = await storedOn((await group.masterPort()) ?? 0, { prefix: store.keys.prefix, world: WORLD });
    expect(acknowledged.filter((uid) => stored.state[uid] !== "1")).toEqual([]);
  } finally {
    await store.close();
    await group.stop();
  }
}, 60_000);

type Marks = Record<string, number>;

async function failover(minReplicas: number, afterPromotion: (g: SentinelGroupHandle, m: Marks) => Promise<void>) {
  const group = await startSentinelGroup(1);
  const place = { prefix: uniquePrefix("failover"), world: WORLD };
  const sentinels = group.sentinels.map((s) => ({ host: "127.0.0.1", port: s.port }));
  let bl: Boardline | undefined;
  try {
    await seed({ mode: "sentinel", sentinels, masterName: group.masterName }, place.prefix);
    bl = await startBoardlineProcess(
      {
        REDIS_SENTINELS: sentinels.map((s) => `${s.host}:${s.port}`).join(","),
        REDIS_SENTINEL_NAME: group.masterName,
        REDIS_KEY_PREFIX: place.prefix,
      },
      minReplicas,
    );
    const marks: Marks = {};
    const run = await underLoad(
      bl,
      async () => {
        await sleep(1500);
        group.primary.kill("SIGKILL");
        marks.killedAt = Date.now();
        const promoted = async () => ((await group.masterPort()) ?? group.primary.port) !== group.primary.port;
        await eventually(promoted, PROMOTION_BOUND_MS, "the Sentinels to promote the replica");
        marks.promotedAt = Date.now();
        await afterPromotion(group, marks);
      },
      3000,
    );
    const killedAt = marks.killedAt ?? 0;
    expectDocumentedBehaviour(run, killedAt, marks.attachedAt ?? marks.promotedAt ?? 0);
    if (marks.attachingAt !== undefined) expectNoAckWhileAlone(run, killedAt, marks.attachingAt);
    const lost = lostAcknowledged(run, await storedOn((await group.masterPort()) ?? 0, place));
    console.info(figures(`Sentinel failover, REDIS_MIN_REPLICAS=${minReplicas}`, run, marks, lost.length));
    if (minReplicas > 0) expect(lost.map((o) => o.uid)).toEqual([]);
  } finally {
    await bl?.stop();
    await group.stop();
  }
}
