/**
 * `SOAK_INSTANCES=3 npm run soak`: the soak's mixed load spread over several
 * boardline processes (`node dist/src/main.js`, built by `npm run soak`) on a
 * 3-master Redis Cluster, with the conversion simulator. Each client talks to
 * one instance (JSON and gRPC mutes, ConvertFiles, deliberately invalid mutes).
 * Every 20 s one instance is SIGKILLed (in turn) and restarted on its port 2 s
 * later; every 15 s the conversion backend is slow or failing for 3 s. At the
 * end it prints per-instance figures (calls, success outside its down time,
 * answers by kind, restarts: restart to ready and how long its clients saw
 * errors) and the acknowledged writes missing from Redis: `lost writes = 0`
 * (exit 1 otherwise, on an answer outside the documented ones, on a failure
 * outside an instance's down time, or on a task not followed to its end).
 */
import { randomBytes } from "node:crypto";
import { Cluster } from "ioredis";
import { type ConversionSimulator, startConversionSimulator } from "../../src/demo/simulator/index.js";
import { silentLogger } from "../../src/log.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis/store.js";
import { mintToken } from "../../src/auth/jwt.js";
import {
  type CallKind,
  InstanceClient,
  type LoadChannel,
  missingWrites,
  type Outcome,
  unfinished,
} from "../harness/instance-load.js";
import { type Instance, noneAlive, startInstances } from "../harness/instances.js";
import { type RedisClusterHandle, startRedisCluster } from "../harness/redis-topologies.js";
import { sleep } from "../harness/sleep.js";

export interface InstancesSoakOptions {
  readonly seconds: number;
  readonly concurrency: number;
  readonly instances: number;
}

/** One kill of an instance: when, and when it answered /readyz 200 again. */
interface Downtime {
  readonly instance: number;
  readonly killedAt: number;
  readyAt: number;
  restartMs: number;
}

interface Rig {
  readonly cluster: RedisClusterHandle;
  readonly sim: ConversionSimulator;
  readonly store: RedisStore;
  readonly raw: Cluster;
  readonly instances: Instance[];
  readonly channels: LoadChannel[];
  readonly prefix: string;
  readonly secret: string;
}

const PROJECT = "soak";
const SDK_TOKEN = "NETLESSSDK_soak";
/** Answers each kind of call may get (0, no answer, only while its instance is down). */
const EXPECTED: Record<CallKind, readonly number[]> = {
  "json mute": [200, 503],
  "grpc mute": [200, 503],
  convert: [200, 503, 504],
  "invalid mute": [400],
};

/** Runs the soak; resolves true when nothing was lost and every answer was a documented one. */
export async function soakInstances(o: InstancesSoakOptions): Promise<boolean> {
  const rig = await setUp(o.instances);
  const token = await mintToken({
    secret: new TextEncoder().encode(rig.secret),
    project: PROJECT,
    subject: "soak",
    ttlSeconds: o.seconds + 600,
  });
  const clients = rig.instances.map((i) => new InstanceClient(i.index, i.url, token));
  const outcomes: Outcome[] = [];
  const downtimes: Downtime[] = [];
  const t0 = Date.now();
  const end = t0 + o.seconds * 1000;
  const progress = setInterval(() => {
    process.stderr.write(`  ${Math.round((Date.now() - t0) / 1000)} s: ${outcomes.length} requests\n`);
  }, 10_000);
  const workers = Array.from({ length: o.concurrency }, (_, w) =>
    work(clients[w % clients.length] as InstanceClient, w, rig.channels, end, outcomes),
  );
  await Promise.all([...workers, chaos(rig, t0, end, downtimes)]);
  clearInterval(progress);

  const missing = await missingWrites(
    rig.raw,
    { prefix: rig.prefix, project: PROJECT, channels: rig.channels },
    outcomes,
  );
  const tasks = outcomes.filter((c) => c.kind === "convert" && c.status === 200).map((c) => c.key);
  const open = await waitForTasks(rig, tasks);
  const unexpected = outcomes.filter((c) => !expected(c, downtimes));
  const ok = report(o, rig, { outcomes, downtimes, missing, tasks: tasks.length, open, unexpected });
  return (await tearDown(rig)) && ok;
}

async function setUp(count: number): Promise<Rig> {
  const cluster = await startRedisCluster(3);
  const sim = await startConversionSimulator({ credentials: { sdkTokens: [SDK_TOKEN], keys: [] }, progressMs: 200 });
  const prefix = "soak:";
  const store = createRedisStore(
    { mode: "cluster", nodes: cluster.seeds },
    { keyPrefix: prefix, logger: silentLogger() },
  );
  await store.waitUntilReady();
  // Eight channels: their hash tags spread the mutes over the three masters.
  const channels = Array.from({ length: 8 }, (_, i) => ({
    channel: `chan-${i}`,
    hostPassphrase: `host ${i} ${randomBytes(6).toString("hex")}`,
  }));
  for (const c of channels) await store.createChannel({ project: PROJECT, ...c });
  await store.setWhiteboard(PROJECT, { region: "us-sv", credentials: { sdkToken: SDK_TOKEN } });
  const secret = randomBytes(32).toString("hex");
  const instances = await startInstances(count, {
    REDIS_CLUSTER_NODES: cluster.seeds.map((n) => `${n.host}:${n.port}`).join(","),
    REDIS_KEY_PREFIX: prefix,
    JWT_SECRET: secret,
    CONVERSION_API_BASE: sim.url,
    CONVERSION_TIMEOUT_MS: "1000",
    CONVERSION_POLL_FIRST_MS: "500",
    CONVERSION_POLL_MAX_MS: "1000",
    // The guessing limit is on (its counters live in Redis too), high enough never to lock the soak out.
    GUESS_LIMIT: "1000000",
    SHUTDOWN_GRACE_MS: "2000",
  });
  return { cluster, sim, store, raw: new Cluster([...cluster.seeds]), instances, channels, prefix, secret };
}

/** One client of one instance: 75 % mutes (JSON and gRPC), 5 % ConvertFiles, 20 % invalid mutes. */
async function work(client: InstanceClient, w: number, channels: LoadChannel[], end: number, out: Outcome[]) {
  const channel = w % channels.length;
  const at = channels[channel] as LoadChannel;
  for (let n = 0; Date.now() < end; n++) {
    const roll = Math.random();
    const kind: CallKind =
      roll < 0.375 ? "json mute" : roll < 0.75 ? "grpc mute" : roll < 0.8 ? "convert" : "invalid mute";
    const o = await client.call(kind, channel, at, `w${w}-${n}`, n % 2 === 0);
    out.push(o);
    if (o.status === 0) await sleep(50);
    else if (o.status === 503) await sleep(10);
  }
}

/**
 * At 20 s, 40 s, … an instance (in turn) is SIGKILLed and restarted 2 s later;
 * at 15 s, 30 s, … the backend is slow or failing for 3 s. Nothing starts in
 * the last 5 s, so the last restart is seen serving.
 */
async function chaos(rig: Rig, t0: number, end: number, downtimes: Downtime[]): Promise<void> {
  const kills = async () => {
    for (let k = 1; t0 + k * 20_000 < end - 5_000; k++) {
      await sleep(t0 + k * 20_000 - Date.now());
      const victim = rig.instances[(k - 1) % rig.instances.length] as Instance;
      victim.kill();
      const down: Downtime = { instance: victim.index, killedAt: Date.now(), readyAt: Infinity, restartMs: 0 };
      downtimes.push(down);
      await sleep(2_000);
      down.restartMs = await victim.restart();
      down.readyAt = Date.now();
    }
  };
  const faults = async () => {
    for (let k = 1; t0 + k * 15_000 < end - 5_000; k++) {
      await sleep(t0 + k * 15_000 - Date.now());
      rig.sim.setFault(k % 2 === 0 ? { kind: "status", status: 503 } : { kind: "slow", delayMs: 1500 });
      await sleep(3_000);
      rig.sim.clearFaults();
    }
  };
  await Promise.all([kills(), faults()]);
}

/** A documented answer for its kind, or no answer from a call that overlaps its instance's down time. */
function expected(o: Outcome, downtimes: readonly Downtime[]): boolean {
  if (o.status !== 0) return EXPECTED[o.kind].includes(o.status);
  return downtimes.some((d) => d.instance === o.instance && o.end >= d.killedAt && o.start <= d.readyAt);
}

/** Waits up to 60 s for every acknowledged task to be Finished; the ones still open. */
async function waitForTasks(rig: Rig, tasks: readonly string[]): Promise<number> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const open = (await unfinished(rig.raw, rig.prefix, tasks)).length;
    if (open === 0 || Date.now() > deadline) return open;
    await sleep(500);
  }
}

interface Results {
  readonly outcomes: readonly Outcome[];
  readonly downtimes: readonly Downtime[];
  readonly missing: Awaited<ReturnType<typeof missingWrites>>;
  readonly tasks: number;
  readonly open: number;
  readonly unexpected: readonly Outcome[];
}

/** Prints the figures; true when nothing was lost, every answer was documented and every task ended. */
function report(o: InstancesSoakOptions, rig: Rig, r: Results): boolean {
  const lost = r.missing.mutes.length + r.missing.events.length + r.missing.conversions.length;
  const mutes = r.outcomes.filter((c) => c.status === 200 && (c.kind === "json mute" || c.kind === "grpc mute"));
  console.log(
    `soak: ${o.seconds} s, ${o.concurrency} clients over ${o.instances} instances on a 3-master Redis Cluster`,
  );
  console.log(`requests: ${r.outcomes.length} (${(r.outcomes.length / o.seconds).toFixed(0)}/s)`);
  for (const instance of rig.instances) {
    const mine = r.outcomes.filter((c) => c.instance === instance.index);
    const up = mine.filter((c) => !r.downtimes.some((d) => overlaps(c, d, instance.index)));
    const upMutes = up.filter((c) => c.kind === "json mute" || c.kind === "grpc mute");
    const good = upMutes.filter((c) => c.status === 200).length;
    const kills = r.downtimes.filter((d) => d.instance === instance.index);
    const restarts = kills.map((d) => {
      const errorsUntil = Math.max(
        0,
        ...mine.filter((c) => c.status === 0 && overlaps(c, d, d.instance)).map((c) => c.end),
      );
      return `restart to ready ${d.restartMs} ms, clients saw errors for ${Math.max(0, errorsUntil - d.killedAt)} ms`;
    });
    console.log(
      `  instance ${instance.index}: ${mine.length} calls; mutes answered 200 while it was up: ${good}/${upMutes.length} ` +
        `(${((good / Math.max(1, upMutes.length)) * 100).toFixed(2)} %); by kind ${byKind(mine)}` +
        (restarts.length === 0 ? "" : `; killed ${kills.length}×: ${restarts.join("; ")}`),
    );
  }
  console.log(`acknowledged mutes: ${mutes.length}, acknowledged conversions: ${r.tasks} (${r.open} not Finished)`);
  console.log(
    `missing: ${r.missing.mutes.length} mute states, ${r.missing.events.length} mute events, ` +
      `${r.missing.conversions.length} task records; lost writes = ${lost}`,
  );
  console.log(`unexpected answers: ${r.unexpected.length}`);
  return lost === 0 && r.unexpected.length === 0 && r.open === 0;
}

function overlaps(c: Outcome, d: Downtime, instance: number): boolean {
  return d.instance === instance && c.end >= d.killedAt && c.start <= d.readyAt;
}

function byKind(calls: readonly Outcome[]): string {
  const counts = new Map<string, number>();
  for (const c of calls) {
    const key = `${c.kind} ${c.status === 0 ? "no answer" : c.status}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts.entries()]
    .sort()
    .map(([k, v]) => `${k}=${v}`)
    .join(", ");
}

/** Stops everything; true when every instance exited 0 on SIGTERM and no process is left. */
async function tearDown(rig: Rig): Promise<boolean> {
  const codes = await Promise.all(rig.instances.map((i) => i.stop()));
  rig.raw.disconnect();
  await rig.store.close();
  await rig.sim.close();
  await rig.cluster.stop();
  const pids = rig.instances.flatMap((i) => i.pids);
  for (let i = 0; i < 100 && !noneAlive(pids); i++) await sleep(50);
  const clean = codes.every((c) => c === 0) && noneAlive(pids);
  console.log(`stopped: exit codes ${codes.join(", ")}; ${clean ? "no process left" : "NOT CLEAN"}`);
  return clean;
}
