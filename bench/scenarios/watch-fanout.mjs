/**
 * The watch fan-out of one boardline instance, each figure against the bare
 * fan-out floor (bench/baselines/fanout-floor.mjs: node:http2 + node:http, no
 * Redis, no JWT) measured in the same run, pinned alike. `npm run
 * bench:watch-fanout` runs it (and `npm run bench`); it writes its section of
 * docs/performance.md (not with BENCH_NO_WRITE=1) and prints it.
 *
 * What runs, all on loopback, every process started and stopped here:
 *   - a redis-server of its own, one boardline (dist/src/main.js, the package's
 *     V8 flags, MAX_WATCHES raised for the watches, --expose-gc and
 *     bench/lib/gc-probe.cjs so the live heap can be read) and the floor (same
 *     flags, same probe), all on the first allowed CPU; this process, the
 *     watcher processes (bench/lib/watcher-process.mjs, BENCH_FANOUT_CLIENTS of
 *     them sharing the watches) and wrk on the second (bench/lib/processes.mjs
 *     splitCpus); the stall probe (bench/lib/stall.mjs) at the start and the end;
 *   - channels of one project (watched, unwatched, and one for the delays),
 *     written through the store's own code, each with one mute event.
 *
 * Per target (boardline, then the floor):
 *   1. memory: RSS and the live heap after two full GCs, idle after a warm-up
 *      (mutes, a few watches opened and closed) and with BENCH_FANOUT_WATCHES
 *      open — half gRPC (HTTP/2 connections of 200 streams), half SSE (an
 *      HTTP/1.1 connection each), 5 per channel — each attached once it has
 *      its channel's attach mute;
 *   2. mutes at c16 (wrk, bench/wrk/pstn-mute.lua) with those watches and without,
 *      BENCH_FANOUT_ROUNDS rounds in alternating order: to channels nobody
 *      watches, and going round the watched channels (5 deliveries per mute,
 *      every one checked against the events the channels gained);
 *   3. BENCH_FANOUT_DELAY_WATCHERS gRPC watchers of one channel, then as many
 *      SSE watchers: BENCH_FANOUT_PROBES mutes one at a time, from each mute's
 *      answer to its event at every watcher.
 *
 * Environment: BENCH_FANOUT_WATCHES (10000; a multiple of 10), BENCH_FANOUT_DELAY_WATCHERS
 * (1000), BENCH_FANOUT_PROBES (100), BENCH_FANOUT_ROUNDS (2), BENCH_FANOUT_CLIENTS (watcher
 * processes, 2), BENCH_FANOUT_TARGETS ("boardline floor"), BENCH_SECONDS (5), BENCH_WARMUP (1),
 * BENCH_KEEP (keep the work directory), BENCH_NO_WRITE; BENCH_FANOUT_SNAPSHOTS=1 also writes a heap
 * snapshot with each memory reading and prints, per target, the kinds of objects that grew the most
 * per open watch (bench/lib/heap-summary.mjs; keep the snapshots with BENCH_KEEP=1), and
 * BENCH_FANOUT_PROTOCOLS ("grpc sse") which protocols the watches take turns in (one alone: every watch
 * over it), to read one protocol's cost apart, and BENCH_SETTLE_MS (1000) how long after the watches
 * are open their memory is read (the allocator keeps what the burst of opening freed for up to 10 s).
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { attach, detach, muteCell, probeDelays } from "../lib/fanout-phases.mjs";
import { writeSection } from "../report/document.mjs";
import { render } from "../report/watch-fanout.mjs";
import { heapGrowth, summarizeHeap } from "../lib/heap-summary.mjs";
import { WatcherProcesses } from "../lib/fanout-watchers.mjs";
import { eventsAdded, lastEventIds, muter } from "../lib/mute-calls.mjs";
import {
  ALLOCATOR,
  freePort,
  loopLagMaxMs,
  seriesCount,
  nodeFlags,
  Servers,
  serverMemory,
  splitCpus,
  stallProbe,
} from "../lib/processes.mjs";
import { createLogger, createRedisStore, keySchema, mintToken } from "../lib/boardline.mjs";

const env = process.env;
const WATCHES = Number(env.BENCH_FANOUT_WATCHES ?? 10_000);
const PER_CHANNEL = 5;
const CHANNELS = WATCHES / PER_CHANNEL;
const DELAY_WATCHERS = Number(env.BENCH_FANOUT_DELAY_WATCHERS ?? 1000);
const PROBES = Number(env.BENCH_FANOUT_PROBES ?? 100);
const ROUNDS = Number(env.BENCH_FANOUT_ROUNDS ?? 2);
const CLIENTS = Number(env.BENCH_FANOUT_CLIENTS ?? 2);
const TARGETS = (env.BENCH_FANOUT_TARGETS ?? "boardline floor").split(/\s+/).filter(Boolean);
const PROTOCOLS = (env.BENCH_FANOUT_PROTOCOLS ?? "grpc sse").split(/\s+/).filter(Boolean);
const SNAPSHOTS = env.BENCH_FANOUT_SNAPSHOTS === "1";
const SECONDS = Number(env.BENCH_SECONDS ?? 5);
const WARMUP = Number(env.BENCH_WARMUP ?? 1);
if (!(WATCHES >= 10 && WATCHES % 10 === 0) || !(DELAY_WATCHERS >= 1) || !(PROBES >= 1) || !(ROUNDS >= 1)) {
  throw new Error("BENCH_FANOUT_WATCHES must be a multiple of 10; delay watchers, probes and rounds at least 1");
}
if (PROTOCOLS.length === 0 || PROTOCOLS.some((p) => p !== "grpc" && p !== "sse")) {
  throw new Error('BENCH_FANOUT_PROTOCOLS must be "grpc", "sse" or both');
}
if (!(CLIENTS >= 1) || TARGETS.some((t) => t !== "boardline" && t !== "floor")) {
  throw new Error('BENCH_FANOUT_CLIENTS must be at least 1, BENCH_FANOUT_TARGETS "boardline" and/or "floor"');
}
/** Unwatched channels the first mute cell goes round. */
const UNWATCHED = 100;
/** Watches opened and closed in the warm-up before the idle memory reading. */
const WARMUP_WATCHES = Math.min(200, WATCHES);
const PREFIX = "fo:";
const PROJECT = "bench-fanout";
const SECRET = randomBytes(32).toString("hex");
const watchedId = (i) => `fo-${String(i).padStart(5, "0")}`;
const WATCHED = Array.from({ length: CHANNELS }, (_, i) => watchedId(i));
const IDLE = Array.from({ length: UNWATCHED }, (_, i) => `fo-idle-${String(i).padStart(3, "0")}`);
const ONE = "fo-one";

const log = (...args) => console.error(`[bench:watch-fanout ${new Date().toISOString().slice(11, 19)}]`, ...args);

/** Open files each process here may hold: a server holds an SSE watch's connection each, and so do the watchers. */
function checkOpenFiles() {
  const soft = Number(/^Max open files\s+(\d+)/m.exec(readFileSync("/proc/self/limits", "utf8"))?.[1]);
  const needed = WATCHES / 2 + Math.max(DELAY_WATCHERS, 1000);
  if (!(soft >= needed)) {
    throw new Error(
      `ulimit -n is ${soft}: ${WATCHES} watches need at least ${needed} open files (run ulimit -n 20000 first)`,
    );
  }
  return soft;
}

const OPEN_FILES = checkOpenFiles();
const NPROC = os.availableParallelism();
const WORK = mkdtempSync(join(os.tmpdir(), "boardline-bench-fanout-"));
const { serverCpu: SERVER_CPU, loadCpu: LOAD_CPU } = splitCpus();
const servers = new Servers({ work: WORK, cpu: SERVER_CPU });

// --- the channels and the mutes' bodies ---------------------------------------------------------

async function seed(redisUrl) {
  const store = createRedisStore(
    { mode: "single", url: redisUrl },
    { keyPrefix: PREFIX, logger: createLogger("warn") },
  );
  await store.waitUntilReady();
  const all = [...WATCHED, ...IDLE, ONE];
  const passphrases = new Map(all.map((c) => [c, `${c} host ${randomBytes(6).toString("hex")}`]));
  // As CreateChannel writes them (the channel steps, no scan for older records), 20 at a time.
  for (let i = 0; i < all.length; i += 20) {
    await Promise.all(
      all.slice(i, i + 20).map(async (channel) => {
        await store.channels.create({
          project: PROJECT,
          channel,
          passphrases: [{ role: "host", passphrase: passphrases.get(channel) ?? "" }],
          createdBy: "bench",
          createdAt: Date.now(),
          expireAt: undefined,
        });
        await store.setMute({ project: PROJECT, channel, uid: "seed", mute: true, by: "bench", at: Date.now() });
      }),
    );
  }
  await store.close();
  return passphrases;
}

/** wrk's body files: mutes going round `channels`, uid-major (consecutive mutes to different channels). */
function writeBodies(name, channels, uids, bodyOf) {
  const lines = [];
  for (let u = 0; u < uids; u++) {
    for (const mute of [true, false])
      for (const c of channels) lines.push(JSON.stringify(bodyOf(c, `load-${u}`, mute)));
  }
  const file = join(WORK, `bodies-${name}.txt`);
  writeFileSync(file, `${lines.join("\n")}\n`);
  return file;
}

/** The targets' bodies: the same mutes, as each takes them. */
function bodiesFor(name, bodyOf) {
  return {
    unwatched: writeBodies(`${name}-unwatched`, IDLE, 50, bodyOf),
    watched: writeBodies(`${name}-watched`, WATCHED, Math.max(1, Math.ceil(10_000 / CHANNELS)), bodyOf),
  };
}

// --- the targets ---------------------------------------------------------------------------------

/** The mutes' token (also in `jwtFile`, for wrk) and the watches' (scope pstn.gateway). */
async function tokens(jwtFile) {
  const secret = new TextEncoder().encode(SECRET);
  const common = { secret, project: PROJECT, ttlSeconds: 24 * 3600 };
  const muteJwt = await mintToken({ ...common, subject: "bench" });
  writeFileSync(jwtFile, muteJwt);
  return { muteJwt, watchJwt: await mintToken({ ...common, subject: "bench-gateway", scopes: ["pstn.gateway"] }) };
}

async function boardlineTarget(redisUrl, passphrases, jwtFile, { muteJwt, watchJwt }) {
  const probeFile = join(WORK, "boardline.memory.json");
  const bl = await servers.startBoardline(
    "boardline",
    {
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: PREFIX,
      JWT_SECRET: SECRET,
      MAX_WATCHES: String(WATCHES + DELAY_WATCHERS + 1000),
      MAX_WATCHES_PER_PROJECT: String(WATCHES + DELAY_WATCHERS + 1000), // every watch is one project's
      BENCH_GC_PROBE_OUT: probeFile,
      ...(SNAPSHOTS ? { BENCH_GC_PROBE_SNAPSHOT: `${probeFile}.heapsnapshot` } : {}),
    },
    ["--expose-gc", "-r", "./bench/lib/gc-probe.cjs"],
  );
  const redis = new Redis(redisUrl, { connectionName: "bench-probe", maxRetriesPerRequest: 1 });
  const keys = keySchema(PREFIX);
  const streamKeys = (channels) => channels.map((c) => keys.pstnEvents(PROJECT, c));
  const bodyOf = (c, uid, mute) => ({ uid, passphrase: passphrases.get(c), mute });
  const muteUrl = `${bl.url}/v1/channel/pstn/mute`;
  return {
    name: "boardline",
    pid: bl.pid,
    probeFile,
    sseUrl: bl.url,
    grpcUrl: bl.url,
    watchJwt,
    waitGrpc: false,
    muteUrl,
    jwtFile,
    bodies: bodiesFor("boardline", bodyOf),
    mute: muter(muteUrl, muteJwt, bodyOf),
    lastIds: async (channels) => {
      const ids = await lastEventIds(redis, streamKeys(channels));
      return new Map(channels.map((c, i) => [c, ids[i]]));
    },
    added: (channels) => eventsAdded(redis, streamKeys(channels)),
    // An instance too busy to answer /metrics within 10 s says nothing rather than ending the run.
    lagMs: () => loopLagMaxMs(bl.metricsUrl).catch(() => Number.POSITIVE_INFINITY),
    series: () => seriesCount(bl.metricsUrl),
    stop: () => {
      redis.disconnect();
      return bl.stop();
    },
  };
}

async function floorTarget(jwtFile) {
  const probeFile = join(WORK, "floor.memory.json");
  const [port, grpcPort] = [await freePort(), await freePort()];
  const argv = [
    process.execPath,
    ...nodeFlags(),
    "--expose-gc",
    "-r",
    "./bench/lib/gc-probe.cjs",
    "bench/baselines/fanout-floor.mjs",
  ];
  const floor = servers.spawn("fanout-floor", argv, {
    PORT: String(port),
    GRPC_PORT: String(grpcPort),
    BENCH_GC_PROBE_OUT: probeFile,
    ...(SNAPSHOTS ? { BENCH_GC_PROBE_SNAPSHOT: `${probeFile}.heapsnapshot` } : {}),
  });
  const url = `http://127.0.0.1:${port}`;
  for (
    let i = 0;
    !(await fetch(`${url}/added`).then(
      (r) => r.ok,
      () => false,
    ));
    i++
  ) {
    if (i > 100 || floor.child.exitCode !== null) throw new Error(`the floor did not start: see ${floor.logFile}`);
    await sleep(100);
  }
  const bodyOf = (channel, uid, mute) => ({ channel, uid, mute });
  return {
    name: "floor",
    pid: floor.pid,
    probeFile,
    sseUrl: url,
    grpcUrl: `http://127.0.0.1:${grpcPort}`,
    watchJwt: "floor",
    waitGrpc: true,
    muteUrl: `${url}/mute`,
    jwtFile,
    bodies: bodiesFor("floor", bodyOf),
    mute: muter(`${url}/mute`, "floor", bodyOf),
    lastIds: async () => new Map(),
    added: async (channels) => {
      const added = /** @type {Record<string, number>} */ (await fetch(`${url}/added`).then((r) => r.json()));
      return channels.map((c) => added[c] ?? 0);
    },
    lagMs: async () => Number.NaN,
    stop: floor.stop,
  };
}

// --- one target's measurements -----------------------------------------------------------------------

const MIXED = Array.from({ length: WATCHES }, (_, i) => ({
  protocol: PROTOCOLS[Math.floor((i * PROTOCOLS.length) / WATCHES)],
  channel: WATCHED[i % CHANNELS],
}));

async function measure(ctx, target) {
  log(`${target.name}: warm-up`);
  await ctx.pool.problems(); // from here on, this target's
  await muteCell(ctx, target, "watched", undefined, 0);
  const few = MIXED.filter((_, i) => i % (WATCHES / WARMUP_WATCHES) === 0);
  await detach(ctx, target, await attach(ctx, target, few));
  const reading = async (label) => {
    const figures = await serverMemory(target.pid, target.probeFile);
    if (SNAPSHOTS) renameSync(`${target.probeFile}.heapsnapshot`, join(WORK, `${target.name} ${label}.heapsnapshot`));
    return { label, ...figures };
  };
  const memory = [await reading("idle, after a warm-up")];
  // The floor exports no metrics; boardline's series are counted idle and with every watch open.
  const series = target.series === undefined ? undefined : { idle: await target.series(), open: 0 };
  const cells = [];
  const attaches = [];
  const noWatcherCells = async (round) => {
    for (const bodies of ["unwatched", "watched"]) cells.push(await muteCell(ctx, target, bodies, undefined, round));
  };
  for (let round = 1; round <= ROUNDS; round++) {
    if (round % 2 === 1) await noWatcherCells(round);
    const attached = await attach(ctx, target, MIXED);
    attaches.push({ round, ms: attached.ms, lagMs: attached.lagMs, serverCpuMs: attached.serverCpuMs });
    await sleep(Number(process.env.BENCH_SETTLE_MS ?? 1000));
    memory.push(await reading(`${WATCHES} watches open (round ${round})`));
    if (round === 1) printSpaces(target.name, memory[0], memory.at(-1));
    if (round === 1 && series !== undefined) series.open = await target.series();
    if (SNAPSHOTS && round === 1) printGrowth(target.name, memory[0]?.label, memory.at(-1)?.label);
    for (const bodies of ["unwatched", "watched"]) cells.push(await muteCell(ctx, target, bodies, attached, round));
    await detach(ctx, target, attached);
    memory.push(await reading(`after they closed (round ${round})`));
    if (round % 2 === 0) await noWatcherCells(round);
  }
  const delays = [];
  for (const protocol of ["grpc", "sse"]) delays.push(await probeDelays(ctx, target, protocol, ONE, DELAY_WATCHERS));
  return { name: target.name, memory, cells, attaches, delays, series, problems: await ctx.pool.problems() };
}

/**
 * Where the RSS per watch went: each V8 heap space's growth in physical memory per watch, idle → open
 * (the readings before the GCs), what is left of the RSS (outside V8's heap: Node's native objects, the
 * allocator, code), and the RSS per watch once the probe's GCs ran.
 */
function printSpaces(name, idle, open) {
  const kb = (bytes) => bytes / 1024 / WATCHES;
  const grew = open.spaces.map((s) => {
    const before = idle.spaces.find((b) => b.name === s.name);
    return { name: s.name, physical: kb(s.physical - (before?.physical ?? 0)), used: kb(s.used - (before?.used ?? 0)) };
  });
  const rss = (open.rssKb - idle.rssKb) / WATCHES;
  const inV8 = grew.reduce((sum, s) => sum + s.physical, 0);
  const listed = grew
    .filter((s) => Math.abs(s.physical) >= 0.05)
    .map((s) => `${s.name} ${s.physical.toFixed(2)} (used ${s.used.toFixed(2)})`);
  log(
    `${name}: RSS per watch ${rss.toFixed(2)} KB = V8's heap spaces ${inV8.toFixed(2)} KB [${listed.join(", ")}] + the rest ${(rss - inV8).toFixed(2)} KB; after the GCs ${((open.rssAfterGcKb - idle.rssAfterGcKb) / WATCHES).toFixed(2)} KB`,
  );
}

/** BENCH_FANOUT_SNAPSHOTS: the kinds of live objects that grew the most from one reading to another, per watch. */
function printGrowth(name, from, to) {
  const [before, after] = [from, to].map((label) => summarizeHeap(join(WORK, `${name} ${label}.heapsnapshot`)));
  if (before === undefined || after === undefined) return;
  log(`${name}: live objects per open watch (${PROTOCOLS.join(" + ")}), "${from}" → "${to}", the 30 that grew most:`);
  for (const r of heapGrowth(before, after, 30)) {
    log(`  ${(r.bytes / WATCHES).toFixed(0).padStart(6)} B ${(r.count / WATCHES).toFixed(2).padStart(6)} × ${r.kind}`);
  }
}

async function main() {
  const startedAt = new Date();
  const loadStart = os.loadavg();
  const stallBefore = stallProbe(SERVER_CPU, LOAD_CPU);
  log(`stall probe: ${JSON.stringify(stallBefore)}`);
  const redis = await servers.startRedis();
  log(`seeding ${CHANNELS + UNWATCHED + 1} channels`);
  const passphrases = await seed(redis.url);
  const jwtFile = join(WORK, "jwt.txt");
  const jwts = await tokens(jwtFile);
  const pool = new WatcherProcesses(CLIENTS);
  const ctx = { pool, work: WORK, seconds: SECONDS, warmup: WARMUP, probes: PROBES, serverCpu: SERVER_CPU };
  Object.assign(ctx, { loadCpu: LOAD_CPU, log });
  const targets = [];
  for (const name of TARGETS) {
    const target =
      name === "boardline" ? await boardlineTarget(redis.url, passphrases, jwtFile, jwts) : await floorTarget(jwtFile);
    targets.push(await measure(ctx, target));
    await target.stop();
  }
  pool.stop();
  const stallAfter = stallProbe(SERVER_CPU, LOAD_CPU);
  log(`stall probe after: ${JSON.stringify(stallAfter)}`);
  const cpuModel = /model name\s*:\s*(.*)/.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1] ?? "unknown CPU";
  return {
    startedAt: startedAt.toISOString(),
    elapsedS: (Date.now() - startedAt.getTime()) / 1000,
    machine: {
      cpus: os.cpus().length,
      nproc: NPROC,
      cpuModel,
      memGiB: os.totalmem() / 2 ** 30,
      node: process.version,
      allocator: ALLOCATOR,
    },
    loadavg: { start: loadStart, end: os.loadavg() },
    pinning: SERVER_CPU ? { server: SERVER_CPU, load: LOAD_CPU } : undefined,
    openFiles: OPEN_FILES,
    settings: { watches: WATCHES, perChannel: PER_CHANNEL, channels: CHANNELS, unwatched: UNWATCHED, clients: CLIENTS },
    knobs: { delayWatchers: DELAY_WATCHERS, probes: PROBES, rounds: ROUNDS, seconds: SECONDS, warmup: WARMUP },
    stall: { before: stallBefore, after: stallAfter },
    targets,
  };
}

try {
  const result = await main();
  writeFileSync(join(WORK, "watch-fanout.json"), `${JSON.stringify(result, null, 1)}\n`);
  writeSection("watch-fanout", render(result), log);
} finally {
  await servers.stopAll();
  if (env.BENCH_KEEP) log(`work directory kept: ${WORK}`);
  else rmSync(WORK, { recursive: true, force: true });
}
