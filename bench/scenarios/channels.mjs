/**
 * The ChannelAdminService's calls next to mute, and ListChannels over a
 * project of many channels against finding the same by SCAN. Part of `npm run
 * bench` (~1.5 min); `npm run bench:channels` runs only it. Writes its section
 * of docs/performance.md (not with BENCH_NO_WRITE=1) and prints it.
 *
 * What runs, all on loopback, every process started and stopped here:
 *   - a redis-server of its own (no persistence) and one boardline
 *     (dist/src/main.js, the package's V8 flags, NODE_ENV=production,
 *     GUESS_LIMIT=0), both pinned to the first allowed CPU when there are two;
 *     this process, wrk and the stall probe's spinner on the second;
 *   - the stall probe (bench/lib/stall.mjs) before the cells: how much the machine
 *     itself took the servers' CPU away while the other CPU was busy;
 *   - cells, wrk at c16 (HTTP/1.1 keep-alive, JSON routes), BENCH_WARMUP s of
 *     warm-up then BENCH_SECONDS s, BENCH_ROUNDS rounds of: Mute (bench/wrk/post.lua,
 *     one channel's host passphrase), GetChannel (the same channel) and
 *     CreateChannel (bench/wrk/channel-create.lua: a new id per request,
 *     passphrases generated); server and Redis CPU per request from
 *     /proc/<pid>/stat;
 *   - BENCH_CHANNELS (100 000) channels of one project written straight into
 *     Redis in the documented schema (the index, each channel's record, two
 *     passphrase records each — what CreateChannel writes, without the audit
 *     entries), then ListChannels page after page (page_size 1 000, one call at a
 *     time, BENCH_LIST_PASSES passes): time per page, boardline's RSS;
 *   - the same listing by SCAN, as a store without the project's index would
 *     find a channel's passphrases (SCAN MATCH
 *     <prefix>pass:* COUNT 1000 and HMGET project, channel of every key found,
 *     in one pipeline per batch), in a Node process of its own pinned like the
 *     server (`node bench/scenarios/channels.mjs scan <redis url> <prefix> <project>`):
 *     one full pass collects the project's channels, sorted at the end; its time,
 *     that time per 1 000 channels, and the process's RSS.
 *
 * Environment: BENCH_SECONDS (5), BENCH_WARMUP (1), BENCH_ROUNDS (2),
 * BENCH_CHANNELS (100000), BENCH_LIST_PASSES (2), BENCH_NO_WRITE, BENCH_KEEP
 * (keep the work directory with the logs).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { cpuTicks, procKb, Servers, splitCpus, stallProbe, TICK_US } from "../lib/processes.mjs";
import { keySchema, mintToken, passField } from "../lib/boardline.mjs";
import { render } from "../report/channels.mjs";
import { writeSection } from "../report/document.mjs";

const env = process.env;

if (process.argv[2] === "scan") {
  await scanChild(process.argv[3], process.argv[4], process.argv[5]);
  process.exit(0);
}

const SECONDS = Number(env.BENCH_SECONDS ?? 5);
const WARMUP = Number(env.BENCH_WARMUP ?? 1);
const ROUNDS = Number(env.BENCH_ROUNDS ?? 2);
const CHANNELS = Number(env.BENCH_CHANNELS ?? 100_000);
const LIST_PASSES = Number(env.BENCH_LIST_PASSES ?? 2);
const PREFIX = "bl:";
const PROJECT = "bench-project";
const LIST_PROJECT = "bench-list";

const WORK = mkdtempSync(join(os.tmpdir(), "boardline-bench-channels-"));
const startedAt = new Date();
const loadStart = os.loadavg();

// --- CPUs: servers on the first allowed one, this process and the load on the second -----------
const { serverCpu: SERVER_CPU, loadCpu: LOAD_CPU } = splitCpus();
const servers = new Servers({ work: WORK, cpu: SERVER_CPU });

const log = (...args) => console.error(`[bench:channels ${new Date().toISOString().slice(11, 19)}]`, ...args);

const fmt = (n, digits = 0) =>
  Number.isFinite(n) ? n.toLocaleString("en-US", { maximumFractionDigits: digits }).replace(/,/g, " ") : "—";

// --- servers -----------------------------------------------------------------------------------
// --- wrk cells ---------------------------------------------------------------------------------
function wrk(url, script, extraEnv, seconds) {
  const out = join(WORK, `wrk-${randomBytes(4).toString("hex")}.json`);
  const args = ["-t", "1", "-c", "16", "-d", `${seconds}s`, "--timeout", "5s", "--latency", "-s", script, url];
  const r = spawnSync("wrk", args, { env: { ...env, ...extraEnv, BENCH_OUT: out }, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`wrk failed: ${r.stderr}`);
  return JSON.parse(readFileSync(out, "utf8"));
}

async function cell(name, bl, redisPid, url, script, extraEnv) {
  if (WARMUP > 0) wrk(url, script, { ...extraEnv, BENCH_RUN: `${extraEnv.BENCH_RUN ?? ""}w` }, WARMUP);
  const before = { bl: cpuTicks(bl.pid), redis: cpuTicks(redisPid) };
  const w = wrk(url, script, extraEnv, SECONDS);
  const blUs = (cpuTicks(bl.pid) - before.bl) * TICK_US;
  const redisUs = (cpuTicks(redisPid) - before.redis) * TICK_US;
  const errors = Object.values(w.errors).reduce((a, b) => a + b, 0);
  const result = {
    name,
    rps: w.requests / (w.duration_us / 1e6),
    p50: w.latency_us.p50 / 1000,
    p99: w.latency_us.p99 / 1000,
    blUs: blUs / w.requests,
    redisUs: redisUs / w.requests,
    errors,
    rssMb: procKb(bl.pid, "VmRSS") / 1024,
  };
  log(`${name}: ${fmt(result.rps)} req/s, p50 ${result.p50} ms, p99 ${result.p99} ms, errors ${errors}`);
  return result;
}

// --- filling a project with channels, in the documented schema -------------------------------------
async function fill(redisUrl, count) {
  const keys = keySchema(PREFIX);
  const redis = new Redis(redisUrl);
  const now = Date.now();
  const BATCH = 1000;
  const started = performance.now();
  for (let at = 0; at < count; at += BATCH) {
    const p = redis.pipeline();
    for (let i = at; i < Math.min(count, at + BATCH); i++) {
      const channel = `meeting-${String(i).padStart(7, "0")}`;
      const host = randomBytes(16).toString("base64url");
      const attendee = randomBytes(16).toString("base64url");
      p.zadd(keys.channelIndex(LIST_PROJECT), 0, channel);
      p.hset(keys.channelRecord(LIST_PROJECT, channel), {
        created_at: String(now),
        created_by: "bench",
        [passField(keys.passphraseDigestOf(LIST_PROJECT, host))]: "host",
        [passField(keys.passphraseDigestOf(LIST_PROJECT, attendee))]: "attendee",
      });
      for (const [passphrase, role] of /** @type {[string, string][]} */ ([
        [host, "host"],
        [attendee, "attendee"],
      ])) {
        p.hset(keys.passphrase(LIST_PROJECT, passphrase), { project: LIST_PROJECT, channel, role });
      }
    }
    await p.exec();
  }
  const ms = performance.now() - started;
  const dbsize = await redis.dbsize();
  const usedMb = Number(/used_memory:(\d+)/.exec(await redis.info("memory"))?.[1]) / 2 ** 20;
  redis.disconnect();
  return { ms, dbsize, usedMb };
}

async function listAll(bl, token) {
  const pages = [];
  let next = "";
  let channels = 0;
  let peakRss = 0;
  do {
    const started = performance.now();
    const res = await fetch(`${bl.url}/v1/channels:list`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ page_size: 1000, ...(next ? { page_token: next } : {}) }),
    });
    const body = /** @type {{ channels: unknown[], next_page_token?: string }} */ (await res.json());
    pages.push(performance.now() - started);
    if (res.status !== 200) throw new Error(`ListChannels answered ${res.status}: ${JSON.stringify(body)}`);
    channels += body.channels.length;
    next = body.next_page_token ?? "";
    peakRss = Math.max(peakRss, procKb(bl.pid, "VmRSS") / 1024);
  } while (next !== "");
  return { pages, channels, peakRss };
}

/** The child: one SCAN pass over the passphrase keys, as the old admin code made, collecting one project's channels. */
async function scanChild(url, prefix, project) {
  const redis = new Redis(url);
  const rssBefore = process.memoryUsage().rss;
  const started = performance.now();
  const found = new Set();
  let cursor = "0";
  let rounds = 0;
  let keysSeen = 0;
  let peak = rssBefore;
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}pass:*`, "COUNT", 1000);
    cursor = next;
    rounds++;
    keysSeen += keys.length;
    if (keys.length === 0) continue;
    const p = redis.pipeline();
    for (const k of keys) p.hmget(k, "project", "channel");
    for (const [error, value] of (await p.exec()) ?? []) {
      if (!error && Array.isArray(value) && value[0] === project) found.add(value[1]);
    }
    peak = Math.max(peak, process.memoryUsage().rss);
  } while (cursor !== "0");
  const sorted = [...found].sort();
  const ms = performance.now() - started;
  redis.disconnect();
  console.log(
    JSON.stringify({
      ms,
      channels: sorted.length,
      rounds,
      keysSeen,
      rssBeforeMb: rssBefore / 2 ** 20,
      rssPeakMb: Math.max(peak, process.memoryUsage().rss) / 2 ** 20,
    }),
  );
}

// --- the run -------------------------------------------------------------------------------------
async function main() {
  const stallBefore = stallProbe(SERVER_CPU, LOAD_CPU);
  log(`stall probe: ${JSON.stringify(stallBefore)}`);
  const redisServer = await servers.startRedis();
  const secret = randomBytes(32).toString("hex");
  const bl = await servers.startBoardline("boardline", {
    REDIS_URL: redisServer.url,
    REDIS_KEY_PREFIX: PREFIX,
    JWT_SECRET: secret,
  });
  const enc = new TextEncoder().encode(secret);
  const admin = await mintToken({
    secret: enc,
    project: PROJECT,
    subject: "bench",
    ttlSeconds: 3600,
    scopes: ["channels.admin"],
  });
  const muter = await mintToken({ secret: enc, project: PROJECT, subject: "gateway", ttlSeconds: 3600 });
  const listAdmin = await mintToken({
    secret: enc,
    project: LIST_PROJECT,
    subject: "bench",
    ttlSeconds: 3600,
    scopes: ["channels.admin"],
  });
  writeFileSync(join(WORK, "admin.jwt"), admin);
  writeFileSync(join(WORK, "muter.jwt"), muter);

  const created = await fetch(`${bl.url}/v1/channels`, {
    method: "POST",
    headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
    body: JSON.stringify({ channel_id: "bench-room" }),
  }).then(async (r) => /** @type {{ host_passphrase: string }} */ (await r.json()));
  writeFileSync(
    join(WORK, "mute.json"),
    JSON.stringify({ uid: "pstn-1", passphrase: created.host_passphrase, mute: true }),
  );

  const rssIdle = procKb(bl.pid, "VmRSS") / 1024;
  const cells = [];
  for (let round = 1; round <= ROUNDS; round++) {
    cells.push({
      round,
      ...(await cell("Mute", bl, redisServer.pid, `${bl.url}/v1/channel/pstn/mute`, "bench/wrk/post.lua", {
        BENCH_BODY: join(WORK, "mute.json"),
        BENCH_AUTH: join(WORK, "muter.jwt"),
      })),
    });
    cells.push({
      round,
      ...(await cell("GetChannel", bl, redisServer.pid, `${bl.url}/v1/channels/bench-room`, "bench/wrk/post.lua", {
        BENCH_METHOD: "GET",
        BENCH_AUTH: join(WORK, "admin.jwt"),
      })),
    });
    cells.push({
      round,
      ...(await cell("CreateChannel", bl, redisServer.pid, `${bl.url}/v1/channels`, "bench/wrk/channel-create.lua", {
        BENCH_AUTH: join(WORK, "admin.jwt"),
        BENCH_RUN: `r${round}`,
      })),
    });
  }

  const others = await (async () => {
    const r = new Redis(redisServer.url);
    const n = await r.zcard(keySchema(PREFIX).channelIndex(PROJECT));
    r.disconnect();
    return n;
  })();
  log(`filling ${CHANNELS} channels`);
  const filled = await fill(redisServer.url, CHANNELS);
  log(`filled in ${fmt(filled.ms)} ms; ${filled.dbsize} keys, Redis ${fmt(filled.usedMb, 1)} MB`);
  const rssBeforeList = procKb(bl.pid, "VmRSS") / 1024;
  const passes = [];
  for (let pass = 1; pass <= LIST_PASSES; pass++) {
    const started = performance.now();
    const listed = await listAll(bl, listAdmin);
    passes.push({ ...listed, ms: performance.now() - started });
    log(
      `ListChannels pass ${pass}: ${listed.channels} channels in ${listed.pages.length} pages, ${fmt(performance.now() - started)} ms`,
    );
    if (listed.channels !== CHANNELS) throw new Error(`listed ${listed.channels} channels, not ${CHANNELS}`);
  }
  const rssAfterList = procKb(bl.pid, "VmRSS") / 1024;
  const hwm = procKb(bl.pid, "VmHWM") / 1024;

  const scanArgs = ["bench/scenarios/channels.mjs", "scan", redisServer.url, PREFIX, LIST_PROJECT];
  const scanCmd = SERVER_CPU
    ? ["taskset", "-c", SERVER_CPU, process.execPath, ...scanArgs]
    : [process.execPath, ...scanArgs];
  const scans = [];
  for (let pass = 1; pass <= LIST_PASSES; pass++) {
    const [command = process.execPath, ...args] = scanCmd;
    const r = spawnSync(command, args, { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`the SCAN child failed: ${r.stderr}`);
    scans.push(JSON.parse(r.stdout.trim()));
    log(`SCAN pass ${pass}: ${r.stdout.trim()}`);
  }
  const stallAfter = stallProbe(SERVER_CPU, LOAD_CPU);
  log(`stall probe after: ${JSON.stringify(stallAfter)}`);
  const errorLines = readFileSync(bl.logFile, "utf8")
    .split("\n")
    .filter((l) => /"level":(50|60)/.test(l)).length;
  await servers.stopAll();

  const redisVersion = /v=(\S+)/.exec(execFileSync("redis-server", ["--version"], { encoding: "utf8" }))?.[1];
  const md = render({
    others,
    cells,
    rssIdle,
    filled,
    passes,
    rssBeforeList,
    rssAfterList,
    hwm,
    scans,
    stallBefore,
    stallAfter,
    redisVersion,
    errorLines,
    startedAt,
    loadStart,
    settings: { channels: CHANNELS, warmup: WARMUP, seconds: SECONDS, rounds: ROUNDS },
    pinning: SERVER_CPU
      ? `redis-server, boardline and the SCAN process on CPU ${SERVER_CPU}; wrk and this process on CPU ${LOAD_CPU}`
      : "none (one CPU)",
  });
  writeSection("channels", md, log);
}

try {
  await main();
} catch (e) {
  console.error(e);
  process.exitCode = 1;
  await servers.stopAll();
} finally {
  if (env.BENCH_KEEP) log(`work directory kept: ${WORK}`);
  else rmSync(WORK, { recursive: true, force: true });
}
