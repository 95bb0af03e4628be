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
 *   many acknowledged mutes the new master lacks is reported, and none of
 *   them began after the takeover (asserted: those can only be on it).
 *
 * Each scenario names the marks its checks need; a run that never set one
 * fails saying so, rather than being judged against a default.
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
  type LoadRun,
  lostAcknowledged,
  type Outcome,
  seed,
  startBoardlineProcess,
  storedOn,
  underLoad,
  WORLD,
} from "./failover-load.js";

/** The replica takes over within this long of the kill (node timeout, the FAIL vote, the election). */
const TAKEOVER_BOUND_MS = 15_000;
/** Writes to the lone new master are refused within this long (REDIS_REPLICA_TIMEOUT_MS and a retry or two). */
const REFUSAL_BOUND_MS = 5_000;

type Marks = Record<string, number>;

/** What differs between the two runs. */
interface Scenario {
  readonly minReplicas: number;
  /** Runs once the replica has taken over (`port`: the new master), while the load goes on. */
  afterTakeover(
    cluster: ReplicatedClusterHandle,
    port: number,
    marks: Marks,
    outcomes: readonly Outcome[],
  ): Promise<void>;
  /** When the deployment could take acknowledged writes again. */
  writableAt(marks: Marks): number;
  /** The scenario's own checks, after the shared ones; `lost`: mutes answered 200 that the new master lacks. */
  check(run: LoadRun, marks: Marks, lost: readonly Outcome[]): void;
}

test("REDIS_MIN_REPLICAS=1: a 200 survives its master's death; its slots answer 503 until the new master has a replica", async () => {
  await failover({
    minReplicas: 1,
    async afterTakeover(cluster, port, marks, outcomes) {
      // The new master alone: wait until a mute begun after the takeover was refused, then attach a replica.
      const promotedAt = mark(marks, "promotedAt");
      const refused = () => outcomes.some((o) => o.start > promotedAt && o.status === 503);
      await eventually(refused, REFUSAL_BOUND_MS, "a 503 for a mute begun after the takeover");
      marks.attachingAt = Date.now();
      await cluster.addReplica(port);
      marks.attachedAt = Date.now();
    },
    writableAt: (marks) => mark(marks, "attachedAt"),
    check(run, marks, lost) {
      expectNoAckWhileAlone(run, mark(marks, "killedAt"), mark(marks, "attachingAt"));
      expect(lost.map((o) => o.uid)).toEqual([]);
    },
  });
}, 60_000);

test("REDIS_MIN_REPLICAS=0: writes resume once the replica has taken over; acknowledged mutes lost are reported", async () => {
  await failover({
    minReplicas: 0,
    afterTakeover: async () => {},
    writableAt: (marks) => mark(marks, "promotedAt"),
    check(_run, marks, lost) {
      // Only writes the dead master took can be lost: one begun after the takeover reached the new master.
      const promotedAt = mark(marks, "promotedAt");
      expect(lost.filter((o) => o.start > promotedAt).map((o) => o.uid)).toEqual([]);
    },
  });
}, 60_000);

/** A mark the run must have set; without it the run cannot be judged. */
function mark(marks: Marks, name: string): number {
  const at = marks[name];
  if (at === undefined) throw new Error(`the failover run never set the "${name}" mark`);
  return at;
}

async function failover(scenario: Scenario) {
  const { minReplicas } = scenario;
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
    let newMaster: number | undefined;
    const run = await underLoad(
      bl,
      async (outcomes) => {
        await sleep(1500); // traffic before the kill
        victim.kill("SIGKILL");
        marks.killedAt = Date.now();
        const tookOver = async () => {
          const now = await cluster.masterOf(key);
          if (now === undefined || now === victim.port) return false;
          newMaster = now;
          return true;
        };
        await eventually(tookOver, TAKEOVER_BOUND_MS, "the replica to take over");
        marks.promotedAt = Date.now();
        if (newMaster === undefined) throw new Error("the takeover was seen without a new master");
        await scenario.afterTakeover(cluster, newMaster, marks, outcomes);
      },
      3000,
    );
    if (newMaster === undefined) throw new Error("the load ended without a takeover");
    expectDocumentedBehaviour(run, mark(marks, "killedAt"), scenario.writableAt(marks));
    const lost = lostAcknowledged(run, await storedOn(newMaster, place));
    console.info(figures(`Cluster failover, REDIS_MIN_REPLICAS=${minReplicas}`, run, marks, lost.length));
    scenario.check(run, marks, lost);
  } finally {
    await bl?.stop();
    await cluster.stop();
  }
}
