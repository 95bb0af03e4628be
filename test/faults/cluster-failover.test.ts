/**
 * A Cluster master dies under load. Three masters with a replica each
 * (test/harness/redis-replicated-cluster.ts), the real boardline process
 * configured with REDIS_CLUSTER_NODES, 8 writers muting over JSON into one
 * channel; the master serving the channel's slot is SIGKILLed and its replica
 * takes over (cluster-node-timeout 1.5 s). Checked (failover-load.ts): every
 * answer is a 200 or the documented 503 within ANSWER_BOUND_MS, /readyz (which
 * asks every master) turns 503 and back, writes are acknowledged again within
 * RECOVERY_BOUND_MS.
 *
 * - REDIS_MIN_REPLICAS=1: the promoted replica has no replica of its own, so
 *   writes to its slots answer 503 (WAIT 1 cannot be met: correct) until a
 *   new replica has joined it (asserted: none answered 200 in between); every
 *   mute answered 200 is on the new master (asserted).
 * - REDIS_MIN_REPLICAS=0: writes resume once the replica has taken over; how
 *   many acknowledged mutes the new master lacks is reported.
 */
import { expect, test } from "vitest";
import { eventually } from "../harness/eventually.js";
import { type ReplicatedClusterHandle, startReplicatedCluster } from "../harness/redis-replicated-cluster.js";
import { muteKey } from "../harness/redis-state.js";
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

/** The replica takes over within this long of the kill (node timeout, the FAIL vote, the election). */
const TAKEOVER_BOUND_MS = 15_000;

test("REDIS_MIN_REPLICAS=1: a 200 survives its master's death; its slots answer 503 until the new master has a replica", async () => {
  await failover(1, async (cluster, port, marks) => {
    await sleep(1500); // the new master alone: writes to its slots answer 503 meanwhile
    marks.attachingAt = Date.now();
    await cluster.addReplica(port);
    marks.attachedAt = Date.now();
  });
}, 60_000);

test("REDIS_MIN_REPLICAS=0: writes resume once the replica has taken over; acknowledged mutes lost are reported", async () => {
  await failover(0, async () => {});
}, 60_000);

type Marks = Record<string, number>;

async function failover(
  minReplicas: number,
  afterTakeover: (cluster: ReplicatedClusterHandle, port: number, marks: Marks) => Promise<void>,
) {
  const cluster = await startReplicatedCluster(3);
  const place = { prefix: uniquePrefix("failover"), world: WORLD };
  let bl: Boardline | undefined;
  try {
    await seed({ mode: "cluster", nodes: cluster.seeds }, place.prefix);
    const key = muteKey(place);
    const victimPort = await cluster.masterOf(key);
    const victim = cluster.masters.find((m) => m.port === victimPort);
    if (victim === undefined) throw new Error(`no master serves ${key}`);
    const nodes = cluster.seeds.map((n) => `${n.host}:${n.port}`).join(",");
    bl = await startBoardlineProcess({ REDIS_CLUSTER_NODES: nodes, REDIS_KEY_PREFIX: place.prefix }, minReplicas);
    const marks: Marks = {};
    let newMaster = 0;
    const run = await underLoad(
      bl,
      async () => {
        await sleep(1500);
        victim.kill("SIGKILL");
        marks.killedAt = Date.now();
        const tookOver = async () => {
          newMaster = (await cluster.masterOf(key)) ?? victim.port;
          return newMaster !== victim.port;
        };
        await eventually(tookOver, TAKEOVER_BOUND_MS, "the replica to take over");
        marks.promotedAt = Date.now();
        await afterTakeover(cluster, newMaster, marks);
      },
      3000,
    );
    const killedAt = marks.killedAt ?? 0;
    expectDocumentedBehaviour(run, killedAt, marks.attachedAt ?? marks.promotedAt ?? 0);
    if (marks.attachingAt !== undefined) expectNoAckWhileAlone(run, killedAt, marks.attachingAt);
    const lost = lostAcknowledged(run, await storedOn(newMaster, place));
    console.info(figures(`Cluster failover, REDIS_MIN_REPLICAS=${minReplicas}`, run, marks, lost.length));
    if (minReplicas > 0) expect(lost.map((o) => o.uid)).toEqual([]);
  } finally {
    await bl?.stop();
    await cluster.stop();
  }
}
