import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import http2 from "node:http2";
import os from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { eventsAdded, lastEventIds, muter, runMuteLoad } from "../lib/mute-calls.mjs";
import { cpuTicks, loopLagMaxMs, Servers, serverMemory, TICK_US } from "../lib/processes.mjs";
import { median, now, openGrpcWatch, openSseWatch, probe, seen, within } from "../lib/watch-clients.mjs";
import { createLogger, createRedisStore, keySchema, mintToken } from "../lib/boardline.mjs";

const env = process.env;
const WORK = env.BENCH_WORK ?? "";
if (!WORK) throw new Error("BENCH_WORK is required");
const WATCHERS = Number(env.BENCH_PSTN_WATCHERS ?? 1000);
const ROUNDS = Number(env.BENCH_PSTN_ROUNDS ?? 3);
const PROBES = Number(env.BENCH_PSTN_PROBES ?? 100);
const SECONDS = Number(env.BENCH_SECONDS ?? 5);
const WARMUP = Number(env.BENCH_WARMUP ?? 1);
const CHANNELS = 100;
/** How the watchers watch: "grpc" (server streams over a few HTTP/2 connections) or "sse" (a connection each). */
const PROTOCOL = env.BENCH_PSTN_PROTOCOL ?? "grpc";
if (PROTOCOL !== "grpc" && PROTOCOL !== "sse") throw new Error('BENCH_PSTN_PROTOCOL must be "grpc" or "sse"');
const LAYOUT_NAMES = (env.BENCH_PSTN_LAYOUTS ?? "spread one").split(/\s+/).filter(Boolean);
if (!(WATCHERS >= CHANNELS && WATCHERS % CHANNELS === 0) || !(ROUNDS >= 1) || !(PROBES >= 1)) {
  throw new Error(`BENCH_PSTN_WATCHERS must be a multiple of ${CHANNELS}; rounds and probes at least 1`);
}
const CONCURRENCY = 16;
const STREAMS_PER_SESSION = 200;
const UIDS = 50;
/** A probe under load every this many ms. */
const LOADED_PROBE_MS = 50;
/** The longest wait for the watchers to catch up after a cell (bounded: the bench always ends). */
const DRAIN_LIMIT_MS = 60_000;
const PREFIX = "pw:";
const PROJECT = "bench-proj";
const keys = keySchema(PREFIX);
const channelId = (/** @type {number | undefined} */ i) => `pw-${String(i ?? 0).padStart(3, "0")}`;

const log = (text) => process.stderr.write(`[pstn ${new Date().toISOString().slice(11, 19)}] ${text}\n`);

// --- the servers ---------------------------------------------------------------------

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.once(signal, () => process.exit(signal === "SIGINT" ? 130 : 143));
}

const servers = new Servers({ work: WORK, cpu: env.BENCH_SERVER_CPU ?? "" });

async function startBoardline(redisUrl, jwtSecret) {
  const probeFile = join(WORK, "pstn-boardline.memory.json");
  // --expose-gc and the probe only let memory() read the live heap after full GCs.
  const server = await servers.startBoardline(
    "pstn-boardline",
    {
      LOG_LEVEL: env.BENCH_PSTN_LOG_LEVEL ?? "warn",
      REDIS_URL: redisUrl,
      REDIS_KEY_PREFIX: PREFIX,
      JWT_SECRET: jwtSecret,
      MAX_WATCHES: String(WATCHERS),
      MAX_WATCHES_PER_PROJECT: String(WATCHERS), // every watcher is one project's
      BENCH_GC_PROBE_OUT: probeFile,
    },
    ["--expose-gc", "-r", "./bench/lib/gc-probe.cjs"],
  );
  return { ...server, port: Number(new URL(server.url).port), probeFile };
}

// --- measurements of processes -----------------------------------------------------------

/** The instance's memory (bench/lib/processes.mjs serverMemory: RSS, live heap after two full GCs, descriptors). */
const memory = (bl) => serverMemory(bl.pid, bl.probeFile);

// --- seeding ------------------------------------------------------------------------------

async function seed(redisUrl, jwtSecret) {
  const store = createRedisStore(
    { mode: "single", url: redisUrl },
    { keyPrefix: PREFIX, logger: createLogger("warn") },
  );
  await store.waitUntilReady();
  const passphrases = [];
  for (let i = 0; i < CHANNELS; i++) {
    const passphrase = `pw-host-${randomBytes(8).toString("hex")}`;
    await store.createChannel({ project: PROJECT, channel: channelId(i), hostPassphrase: passphrase });
    passphrases.push(passphrase);
  }
  await store.close();
  const secret = new TextEncoder().encode(jwtSecret);
  const common = { secret, project: PROJECT, ttlSeconds: 24 * 3600 };
  return {
    passphrases,
    muteJwt: await mintToken({ ...common, subject: "bench" }),
    gatewayJwt: await mintToken({ ...common, subject: "bench-gateway", scopes: ["pstn.gateway"] }),
  };
}

// --- watchers ------------------------------------------------------------------------------

const reconnectsOf = (attached) => attached.watchers.reduce((n, w) => n + w.reconnects, 0);

/** The event streams of these channels (by number). */
const eventKeys = (channels) => channels.map((c) => keys.pstnEvents(PROJECT, channelId(c)));
/** The last event id of each channel (all were muted at seeding, so there is one). */
const lastIds = (redis, channels) => lastEventIds(redis, eventKeys(channels));
/** How many events each channel's stream ever had. */
const entriesAdded = (redis, channels) => eventsAdded(redis, eventKeys(channels));

/**
 * A layout: which channel each watcher watches, and which channels the mutes go to.
 * spread: channel i % 100; one: channel 0 for all.
 */
const LAYOUTS = {
  spread: { watcherChannel: (i) => i % CHANNELS, muted: [...Array(CHANNELS).keys()] },
  one: { watcherChannel: () => 0, muted: [0] },
};

/** Attaches WATCHERS watchers in `layout`, each from its channel's last id; resolves once every one has the attach mute. */
async function attach(ctx, layoutName, round) {
  const layout = LAYOUTS[layoutName];
  const after = await lastIds(ctx.redis, layout.muted);
  await loopLagMaxMs(ctx.bl.metricsUrl);
  const started = now();
  const cpu0 = cpuTicks(ctx.bl.pid);
  const afterOf = new Map(layout.muted.map((c, i) => [c, after[i]]));
  const sessions = [];
  const watchers = [];
  for (let i = 0; i < WATCHERS; i++) {
    const c = layout.watcherChannel(i);
    if (PROTOCOL === "sse") {
      watchers.push(openSseWatch(ctx.bl.url, ctx.jwts.gatewayJwt, channelId(c), afterOf.get(c)));
      continue;
    }
    if (i % STREAMS_PER_SESSION === 0) {
      const session = http2.connect(ctx.bl.url);
      session.on("error", (e) => seen.errors.push(`session: ${e.message}`));
      sessions.push(session);
    }
    watchers.push(openGrpcWatch(sessions.at(-1), ctx.jwts.gatewayJwt, channelId(c), afterOf.get(c)));
  }
  // One mute per channel, after the watchers' positions: each must reach each of its watchers.
  const perChannel = WATCHERS / layout.muted.length;
  const probes = layout.muted.map((c) => probe(`attach-${layoutName}-${round}-${c}`, perChannel));
  await Promise.all(layout.muted.map((c, i) => ctx.mute(c, probes[i].uid, { retry503: true })));
  const all = Promise.all(probes.map((p) => p.arrived));
  const ok = await within(all, 30_000);
  for (const p of probes) seen.probes.delete(p.uid);
  if (!ok) {
    const missing = probes.reduce((n, p) => n + p.expected - p.received, 0);
    throw new Error(
      `${layoutName}: ${missing} watchers had not received the attach mute after 30 s (${seen.errors.slice(0, 3).join("; ")})`,
    );
  }
  const attachMs = now() - started;
  const lagMs = await loopLagMaxMs(ctx.bl.metricsUrl);
  const cpuMs = ((cpuTicks(ctx.bl.pid) - cpu0) * TICK_US) / 1000;
  log(
    `${layoutName}: ${WATCHERS} ${PROTOCOL} watchers attached in ${attachMs.toFixed(0)} ms (longest event-loop delay ${lagMs.toFixed(0)} ms)`,
  );
  // From here each watcher is due its count now plus every event its channel's stream gains.
  const baseCounts = watchers.map((w) => w.count);
  const baseAdded = await entriesAdded(ctx.redis, layout.muted);
  const attachReconnects = watchers.reduce((n, w) => n + w.reconnects, 0);
  if (attachReconnects > 0)
    log(`${layoutName}: ${attachReconnects} watches ended with UNAVAILABLE while attaching (opened again)`);
  seen.attaches.push({ layout: layoutName, round, ms: attachMs, reconnects: attachReconnects, lagMs, cpuMs });
  return { layoutName, layout, sessions, watchers, attachMs, attachReconnects, baseCounts, baseAdded };
}

async function detach(ctx, attached) {
  for (const w of attached.watchers) {
    w.detaching = true;
    w.cancel();
  }
  await Promise.all(
    attached.sessions.map((s) => within(new Promise((resolve) => s.close(() => resolve(undefined))), 5_000)),
  );
  // The instance gives the subscriptions back once its watches have ended.
  for (let i = 0; i < 50; i++) {
    if ((await subscriptions(ctx)) === 0) return;
    await sleep(100);
  }
  seen.errors.push(`${attached.layoutName}: shard channels still subscribed 5 s after every watcher left`);
}

/** Shard channels subscribed on the instance's Redis (this process's own plain subscriber is subscribed only during probes). */
async function subscriptions(ctx) {
  const channels = await ctx.redis.call("PUBSUB", "SHARDCHANNELS", `${PREFIX}*`);
  return channels.length;
}

/** The instance's Redis connections by name (this process's own, named bench-*, left out). */
async function redisConnections(ctx) {
  const list = (await ctx.redis.client("LIST")).split("\n").filter((l) => l.trim() !== "");
  const byName = {};
  for (const line of list) {
    const name = / name=(\S*)/.exec(line)?.[1] || "(none)";
    if (!name.startsWith("bench-")) byName[name] = (byName[name] ?? 0) + 1;
  }
  return byName;
}

// --- the cells ---------------------------------------------------------------------------

function runWrk(ctx, layoutName, seconds, out) {
  const bodies = join(WORK, `pstn-mutes-${layoutName}.txt`);
  if (!existsSync(bodies)) {
    const lines = [];
    // uid-major, so consecutive mutes go to different channels (spread) and each line is a different state.
    for (let u = 0; u < UIDS; u++)
      for (const c of LAYOUTS[layoutName].muted)
        for (const mute of [true, false])
          lines.push(JSON.stringify({ uid: `load-${u}`, passphrase: ctx.jwts.passphrases[c], mute }));
    writeFileSync(bodies, `${lines.join("\n")}\n`);
  }
  const url = `${ctx.bl.url}/v1/channel/pstn/mute`;
  return runMuteLoad({ url, bodies, jwtFile: ctx.jwtFile, seconds, out, concurrency: CONCURRENCY });
}

/**
 * One cell: warm-up, then SECONDS of c16 JSON mutes (wrk) on the layout's channels,
 * with or without `attached` watchers; with them, probes under load and the wait
 * until every watcher has every event.
 */
async function cell(ctx, layoutName, attached, round) {
  const layout = LAYOUTS[layoutName];
  await runWrk(ctx, layoutName, WARMUP);
  if (attached) await drained(ctx, attached, now());
  const before = await entriesAdded(ctx.redis, layout.muted);
  const counts = attached?.watchers.map((w) => w.count);
  const reconnects0 = attached ? reconnectsOf(attached) : 0;
  const cpu0 = { server: cpuTicks(ctx.bl.pid), redis: cpuTicks(ctx.redisServer.pid), client: process.cpuUsage() };
  const out = join(WORK, `pstn-${layoutName}-w${attached ? WATCHERS : 0}-r${round}.json`);
  await loopLagMaxMs(ctx.bl.metricsUrl);
  const t0 = now();
  let loadDone = false;
  const load = runWrk(ctx, layoutName, SECONDS, out).finally(() => {
    loadDone = true;
  });
  const loaded = [];
  if (attached) {
    // Probes under load: one mute every LOADED_PROBE_MS, each waited for (bounded) in the background.
    for (let i = 0; !loadDone; i++) {
      const c = layout.muted[i % layout.muted.length];
      const p = probe(`loaded-${layoutName}-${round}-${i}`, WATCHERS / layout.muted.length);
      p.sentAt = now();
      loaded.push(
        ctx.mute(c, p.uid).then(
          async (/** @type {number} */ ackAt) => {
            p.ackAt = ackAt;
            await within(p.arrived, DRAIN_LIMIT_MS);
            seen.probes.delete(p.uid);
            return p;
          },
          (e) => {
            seen.muteFailures.push(`probe under load: ${e.message}`);
            seen.probes.delete(p.uid);
            return undefined;
          },
        ),
      );
      await sleep(LOADED_PROBE_MS);
    }
  }
  await load;
  const t1 = now();
  const cpu1 = {
    server: cpuTicks(ctx.bl.pid),
    redis: cpuTicks(ctx.redisServer.pid),
    client: process.cpuUsage(cpu0.client),
  };
  const after = await entriesAdded(ctx.redis, layout.muted);
  const mutes = after.reduce((s, a, i) => s + a - before[i], 0);
  let drain;
  if (attached) drain = await drained(ctx, attached, t0, counts);
  const probes = (await Promise.all(loaded)).filter((p) => p?.lastAt !== undefined);
  const lagMs = await loopLagMaxMs(ctx.bl.metricsUrl);
  const wrk = JSON.parse(readFileSync(out, "utf8"));
  const result = {
    layout: layoutName,
    watchers: attached ? WATCHERS : 0,
    round,
    wrkRequests: wrk.requests,
    rps: wrk.requests / (wrk.duration_us / 1e6),
    p50Ms: wrk.latency_us.p50 / 1000,
    p99Ms: wrk.latency_us.p99 / 1000,
    non2xx: wrk.errors.status,
    socketErrors: wrk.errors.connect + wrk.errors.read + wrk.errors.write + wrk.errors.timeout,
    mutes,
    seconds: (t1 - t0) / 1000,
    serverCpuUsPerMute: ((cpu1.server - cpu0.server) * TICK_US) / mutes,
    redisCpuUsPerMute: ((cpu1.redis - cpu0.redis) * TICK_US) / mutes,
    clientCpuShare: (cpu1.client.user + cpu1.client.system) / 1e6 / ((t1 - t0) / 1000),
    ...drain,
    reconnects: attached ? reconnectsOf(attached) - reconnects0 : 0,
    lagMs,
    loadedProbes: probes.map((p) => ({ ackToLast: p.lastAt - p.ackAt, sentToAck: p.ackAt - p.sentAt })),
  };
  log(
    `${layoutName} w${result.watchers} r${round}: ${result.rps.toFixed(0)} mutes/s, p99 ${result.p99Ms.toFixed(2)} ms` +
      (attached
        ? `, ${result.deliveries} deliveries, all delivered ${result.drainMs?.toFixed(0)} ms after the load ended` +
          ` (${result.missing} missing), probes under load ack→last p50 ${median(result.loadedProbes.map((p) => p.ackToLast)).toFixed(1)} ms`
        : ""),
  );
  return result;
}

/**
 * Waits (at most DRAIN_LIMIT_MS) until every watcher has every event its channel's stream gained
 * since the attach; counts the deliveries since `countsAtT0` (the watchers' counts at `t0`).
 */
async function drained(ctx, attached, t0, countsAtT0) {
  const index = new Map(attached.layout.muted.map((c, i) => [channelId(c), i]));
  const added = await entriesAdded(ctx.redis, attached.layout.muted);
  const due = attached.watchers.map((w, i) => {
    const c = index.get(w.channel);
    return attached.baseCounts[i] + added[c] - attached.baseAdded[c];
  });
  const waitFrom = now();
  const missingNow = () => attached.watchers.reduce((n, w, i) => n + Math.max(0, due[i] - w.count), 0);
  while (missingNow() > 0 && now() - waitFrom < DRAIN_LIMIT_MS && !attached.watchers.every((w) => w.closed)) {
    await sleep(2);
  }
  const at = now();
  const base = countsAtT0 ?? attached.watchers.map(() => 0);
  const deliveries = attached.watchers.reduce((n, w, i) => n + Math.min(w.count, due[i]) - base[i], 0);
  const perMute = WATCHERS / attached.layout.muted.length;
  return {
    deliveries,
    missing: missingNow(),
    drainMs: at - waitFrom,
    deliveriesPerS: deliveries / ((at - t0) / 1000),
    endToEndMutesPerS: deliveries / perMute / ((at - t0) / 1000),
  };
}

/** PROBES mutes one at a time, each waited for at every watcher of its channel (and at the plain subscriber). */
async function probes(ctx, attached, round) {
  const layout = attached.layout;
  const results = [];
  const notifyChannels = layout.muted.map((c) => keys.pstnNotify(PROJECT, channelId(c)));
  for (const name of notifyChannels) await ctx.notify.call("SSUBSCRIBE", name);
  const cpu0 = cpuTicks(ctx.bl.pid);
  const client0 = process.cpuUsage();
  for (let i = 0; i < PROBES; i++) {
    const c = layout.muted[i % layout.muted.length];
    const p = probe(`probe-${attached.layoutName}-${round}-${i}`, WATCHERS / layout.muted.length);
    ctx.notifyWait = { channel: keys.pstnNotify(PROJECT, channelId(c)), probe: p };
    const sentAt = now();
    p.sentAt = sentAt;
    /** @type {number} */
    let ackAt;
    try {
      ackAt = await ctx.mute(c, p.uid);
      p.ackAt = ackAt;
    } catch (e) {
      seen.muteFailures.push(`probe: ${e instanceof Error ? e.message : String(e)}`);
      seen.probes.delete(p.uid);
      continue;
    }
    const ok = await within(p.arrived, 10_000);
    seen.probes.delete(p.uid);
    ctx.notifyWait = undefined;
    if (!ok) {
      seen.errors.push(`probe ${p.uid}: ${p.expected - p.received} watchers without it after 10 s`);
      continue;
    }
    const firstAt = p.firstAt ?? Number.NaN;
    const lastAt = p.lastAt ?? Number.NaN;
    results.push({
      sentToAck: ackAt - sentAt,
      ackToNotify: p.notifyAt === undefined ? Number.NaN : p.notifyAt - ackAt,
      ackToFirst: firstAt - ackAt,
      ackToLast: lastAt - ackAt,
      sentToLast: lastAt - sentAt,
      sentToNotify: p.notifyAt === undefined ? Number.NaN : p.notifyAt - sentAt,
    });
    await sleep(10 + Math.random() * 10);
  }
  const cpuUs = (cpuTicks(ctx.bl.pid) - cpu0) * TICK_US;
  const client = process.cpuUsage(client0);
  for (const name of notifyChannels) await ctx.notify.call("SUNSUBSCRIBE", name);
  const p50 = median(results.map((r) => r.ackToLast));
  // Server CPU per probe: the mute and its deliveries (and whatever else the instance did meanwhile).
  const cpuUsPerProbe = cpuUs / PROBES;
  // This process's CPU per probe: receiving and decoding the probe's event at every watcher, one after another,
  // which the last watcher's delay includes (watchers on machines of their own would not wait for each other).
  const clientCpuUsPerProbe = (client.user + client.system) / PROBES;
  log(
    `${attached.layoutName} r${round}: ${results.length} probes, ack → last watcher p50 ${p50.toFixed(2)} ms; server CPU ${(cpuUsPerProbe / 1000).toFixed(2)} ms per probe`,
  );
  return { probes: results, cpuUsPerProbe, clientCpuUsPerProbe };
}

// --- the run -----------------------------------------------------------------------------

async function main() {
  const startedAt = new Date();
  const loadStart = os.loadavg();
  const redisServer = await servers.startRedis("pstn-redis");
  const redis = new Redis(redisServer.url, { connectionName: "bench-probe", maxRetriesPerRequest: 1 });
  const jwtSecret = randomBytes(32).toString("hex");
  const jwts = await seed(redisServer.url, jwtSecret);
  const jwtFile = join(WORK, "pstn-jwt.txt");
  writeFileSync(jwtFile, jwts.muteJwt);
  const bl = await startBoardline(redisServer.url, jwtSecret);
  log(`boardline on ${bl.url} (pid ${bl.pid}), redis-server pid ${redisServer.pid}`);

  // The plain subscriber: when a mute's notification reaches a client of Redis directly.
  const notify = new Redis(redisServer.url, { connectionName: "bench-notify" });
  /** @typedef {{ channel: string, probe: import("../lib/watch-clients.mjs").Probe }} NotifyWait */
  const ctx = {
    redisServer,
    redis,
    notify,
    bl,
    jwts,
    jwtFile,
    /** The probe whose notification the plain subscriber waits for. */
    notifyWait: /** @type {NotifyWait | undefined} */ (undefined),
  };
  notify.on("smessage", (channel) => {
    const wait = ctx.notifyWait;
    if (wait !== undefined && wait.channel === channel) wait.probe.notifyAt ??= now();
  });
  ctx.mute = muter(`${bl.url}/v1/channel/pstn/mute`, jwts.muteJwt, (c, uid, mute) => ({
    uid,
    passphrase: jwts.passphrases[c],
    mute,
  }));
  // Every channel gets an event, so every watch can start from an event id.
  for (let c = 0; c < CHANNELS; c++) await ctx.mute(c, "seed");

  const memoryPoints = [];
  const mark = async (label) => {
    memoryPoints.push({
      label,
      ...(await memory(bl)),
      redis: await redisConnections(ctx),
      subscriptions: await subscriptions(ctx),
    });
  };

  // Warm-up, then memory with no watcher, with each layout attached, and after each detach.
  for (const layoutName of LAYOUT_NAMES) await runWrk(ctx, layoutName, WARMUP);
  await mark("no watcher (after a warm-up)");
  for (const layoutName of LAYOUT_NAMES) {
    const attached = await attach(ctx, layoutName, 0);
    await sleep(1000);
    await mark(`${WATCHERS} watchers attached (${layoutName})`);
    await detach(ctx, attached);
    await sleep(500);
    await mark(`after they left (${layoutName})`);
  }

  const cells = [];
  const delays = [];
  for (let round = 1; round <= ROUNDS; round++) {
    for (const layoutName of LAYOUT_NAMES) {
      const withoutFirst = round % 2 === 1;
      if (withoutFirst) cells.push(await cell(ctx, layoutName, undefined, round));
      const attached = await attach(ctx, layoutName, round);
      cells.push(await cell(ctx, layoutName, attached, round));
      delays.push({ layout: layoutName, round, ...(await probes(ctx, attached, round)) });
      await detach(ctx, attached);
      if (!withoutFirst) cells.push(await cell(ctx, layoutName, undefined, round));
    }
  }
  await mark("at the end, every watcher gone");
  const cpuModel = /model name\s*:\s*(.*)/.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1] ?? "unknown CPU";
  const redisVersion = (await redis.info("server")).match(/redis_version:(\S+)/)?.[1];
  const result = {
    startedAt: startedAt.toISOString(),
    elapsedS: (Date.now() - startedAt.getTime()) / 1000,
    machine: {
      cpus: os.cpus().length,
      cpuModel,
      memGiB: os.totalmem() / 2 ** 30,
      node: process.version,
      redisVersion,
    },
    loadavg: { start: loadStart, end: os.loadavg() },
    pinning: env.BENCH_SERVER_CPU
      ? `redis-server and boardline on CPU ${env.BENCH_SERVER_CPU}; watchers, probes and wrk on the other CPU`
      : "none",
    protocol: PROTOCOL,
    settings: {
      watchers: WATCHERS,
      channels: CHANNELS,
      rounds: ROUNDS,
      probes: PROBES,
      seconds: SECONDS,
      warmup: WARMUP,
      concurrency: CONCURRENCY,
      streamsPerSession: STREAMS_PER_SESSION,
    },
    cells,
    delays,
    memory: memoryPoints,
    errors: seen.errors,
    reconnects: Object.fromEntries(seen.reconnects),
    mutes503: seen.mutes503,
    muteFailures: seen.muteFailures,
    attaches: seen.attaches,
    outOfOrder: seen.outOfOrder,
    events: seen.events,
  };
  notify.disconnect();
  redis.disconnect();
  await bl.stop();
  await redisServer.stop();
  writeFileSync(join(WORK, "pstn-watchers.json"), `${JSON.stringify(result, null, 1)}\n`);
  return result;
}

const result = await main();
const { render } = await import("../report/pstn-watchers.mjs");
const { writeSection } = await import("../report/document.mjs");
const markdown = render(result);
writeFileSync(join(WORK, "pstn-watchers.md"), markdown);
writeSection("pstn-watchers", markdown, log);
if (seen.errors.length > 0 || seen.outOfOrder > 0) {
  log(
    `FAILED: ${seen.errors.length} errors, ${seen.outOfOrder} events out of order: ${seen.errors.slice(0, 5).join("; ")}`,
  );
  process.exitCode = 1;
}
