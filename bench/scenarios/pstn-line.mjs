/**
 * The phone line on one instance: MuteAll on a line of BENCH_LINE_PARTICIPANTS (1 000) participants,
 * and the gateway's reports a second beside Mute's. Part of `npm run bench` (~2 min); `npm run
 * bench:pstn-line` runs only it. Writes its section of docs/performance.md (not with BENCH_NO_WRITE=1)
 * and prints it.
 *
 * What runs, all on loopback, every process started and stopped here:
 *   - a redis-server of its own (no persistence) and one boardline (dist/src/main.js, the package's V8
 *     flags, NODE_ENV=production, GUESS_LIMIT=0, PSTN_PRESENCE_TTL_SECONDS=3600 so no participant's
 *     lease runs out during the run), both pinned to the first allowed CPU when there are two; this
 *     process (the one client of every call) on the second;
 *   - the stall probe (bench/lib/stall.mjs) before and after;
 *   - one channel (CreateChannel), and BENCH_LINE_PARTICIPANTS joins on it through ReportLine, at
 *     BENCH_LINE_C calls at a time;
 *   - MuteAll with the host passphrase, BENCH_LINE_CALLS calls one after another, mute and unmute in
 *     turn, in BENCH_LINE_PASSES passes: the first right after the joins, the others after the report
 *     rounds (the channel's event stream then full). Per call: the time to its answer here; the Redis
 *     time of its script (SLOWLOG with slowlog-log-slower-than 0, on this redis-server only while the
 *     passes run) and INFO commandstats' counts (how many script calls, XADDs); boardline's longest
 *     event-loop delay over the call (its /metrics, `nodejs_eventloop_lag_max_seconds`, which each
 *     scrape resets), against the same reading over idle windows of the same length; the longest a
 *     PING from a second Redis connection waited meanwhile (what every other client of this Redis
 *     waits at most);
 *   - report rounds (BENCH_LINE_ROUNDS): cells of BENCH_WARMUP s warm-up then BENCH_SECONDS s, each
 *     BENCH_LINE_C workers calling one after another over a connection each (bench/lib/grpc-unary.mjs):
 *     Mute (participants of the line in turn, mute and unmute), ReportLine presence and keypad mute
 *     (participants of the line, each worker its own, a growing sequence), and join/leave pairs (uids
 *     off the line, each joined then left); the cells' order turns each round. Calls a second, p50/p99,
 *     boardline's and Redis's CPU time per call, each report cell's rate ÷ the Mute cell's of its round.
 *
 * Environment: BENCH_SECONDS (5), BENCH_WARMUP (1), BENCH_LINE_PARTICIPANTS (1000), BENCH_LINE_CALLS
 * (20), BENCH_LINE_PASSES (2), BENCH_LINE_ROUNDS (2), BENCH_LINE_C (16), BENCH_NO_WRITE, BENCH_KEEP (keep
 * the work directory with the logs).
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Redis } from "ioredis";
import { keySchema, mintToken } from "../lib/boardline.mjs";
import { grpcConnection } from "../lib/grpc-unary.mjs";
import { cpuTicks, loopLagMaxMs, Servers, splitCpus, stallProbe, TICK_US } from "../lib/processes.mjs";
import {
  LineOutcome,
  MuteAllRequestSchema,
  MuteAllResponseSchema,
  MuteRequestSchema,
  ReportLineRequestSchema,
  ReportLineResponseSchema,
} from "../lib/protos.mjs";
import { render } from "../report/pstn-line.mjs";
import { writeSection } from "../report/document.mjs";

const env = process.env;
const SECONDS = Number(env.BENCH_SECONDS ?? 5);
const WARMUP = Number(env.BENCH_WARMUP ?? 1);
const PARTICIPANTS = Number(env.BENCH_LINE_PARTICIPANTS ?? 1000);
const CALLS = Number(env.BENCH_LINE_CALLS ?? 20);
const PASSES = Number(env.BENCH_LINE_PASSES ?? 2);
const ROUNDS = Number(env.BENCH_LINE_ROUNDS ?? 2);
const C = Number(env.BENCH_LINE_C ?? 16);
const PREFIX = "bl:";
const PROJECT = "bench-line";
const CHANNEL = "bench-line-room";
const REPORT_LINE = "/channel.v1.PstnService/ReportLine";
const MUTE = "/channel.v1.PstnService/Mute";
const MUTE_ALL = "/channel.v1.PstnService/MuteAll";

const WORK = mkdtempSync(join(os.tmpdir(), "boardline-bench-line-"));
const startedAt = new Date();
const loadStart = os.loadavg();
const { serverCpu: SERVER_CPU, loadCpu: LOAD_CPU } = splitCpus();
const servers = new Servers({ work: WORK, cpu: SERVER_CPU });

const log = (...args) => console.error(`[bench:pstn-line ${new Date().toISOString().slice(11, 19)}]`, ...args);

/** The participants on the line. */
const uidOf = (/** @type {number} */ i) => `caller-${String(i).padStart(4, "0")}`;
/** The sequence of the gateway's reports: one counter, so each participant's reports only grow. */
let sequence = 0n;
const nextSequence = () => ++sequence;

/** @param {number[]} xs @param {number} q */
const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : (s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] ?? 0);
};

/** INFO commandstats as { command: { calls, usec } }. */
async function commandStats(/** @type {Redis} */ redis) {
  /** @type {Record<string, { calls: number, usec: number }>} */
  const stats = {};
  for (const m of (await redis.info("commandstats")).matchAll(/^cmdstat_(\S+):calls=(\d+),usec=(\d+)/gm)) {
    stats[m[1] ?? ""] = { calls: Number(m[2]), usec: Number(m[3]) };
  }
  return stats;
}
/** @param {Record<string, { calls: number }>} a @param {Record<string, { calls: number }>} b @param {string} cmd */
const callsBetween = (a, b, cmd) => (b[cmd]?.calls ?? 0) - (a[cmd]?.calls ?? 0);

/**
 * The report of `change` for `uid` with the next sequence, serialised.
 * @param {string} uid
 * @param {{ case: "join", value: { callerId: string } } | { case: "leave", value: {} } | { case: "presence", value: {} } | { case: "keypadMute", value: { mute: boolean } }} change
 */
const report = (uid, change) =>
  toBinary(
    ReportLineRequestSchema,
    create(ReportLineRequestSchema, { channelId: CHANNEL, uid, sequence: nextSequence(), change }),
  );

/** What `call` answered, as a line outcome's name. */
const outcomeOf = (/** @type {Buffer} */ answer) =>
  LineOutcome[fromBinary(ReportLineResponseSchema, answer).outcome] ?? "UNKNOWN";

/**
 * `work(worker, connection)` by C workers at once, each on its own connection, until `seconds` have
 * passed; each resolution of `work` is one call (or `perCall` calls), its time kept.
 * @param {{ call: (path: string, message: Uint8Array) => Promise<Buffer> }[]} connections
 * @param {(worker: number, c: { call: (path: string, message: Uint8Array) => Promise<Buffer> }) => Promise<string | undefined>} work
 * @param {number} seconds
 */
async function closedLoop(connections, work, seconds) {
  const until = performance.now() + seconds * 1000;
  /** @type {number[]} */
  const latencies = [];
  /** @type {Map<string, number>} */
  const outcomes = new Map();
  let errors = 0;
  /** @type {string | undefined} */
  let firstError;
  await Promise.all(
    connections.map(async (c, w) => {
      while (performance.now() < until) {
        const t0 = performance.now();
        try {
          const outcome = await work(w, c);
          latencies.push(performance.now() - t0);
          if (outcome !== undefined) outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
        } catch (e) {
          errors++;
          firstError ??= e instanceof Error ? e.message : String(e);
        }
      }
    }),
  );
  return { latencies, outcomes, errors, firstError };
}

async function main() {
  const stallBefore = stallProbe(SERVER_CPU, LOAD_CPU);
  log(`stall probe: ${JSON.stringify(stallBefore)}`);
  const redisServer = await servers.startRedis();
  const redis = new Redis(redisServer.url);
  const pinger = new Redis(redisServer.url);
  const secret = randomBytes(32).toString("hex");
  const bl = await servers.startBoardline("boardline", {
    REDIS_URL: redisServer.url,
    REDIS_KEY_PREFIX: PREFIX,
    JWT_SECRET: secret,
    PSTN_PRESENCE_TTL_SECONDS: "3600",
  });
  const enc = new TextEncoder().encode(secret);
  const admin = await mintToken({
    secret: enc,
    project: PROJECT,
    subject: "bench",
    ttlSeconds: 3600,
    scopes: ["channels.admin"],
  });
  const gateway = await mintToken({
    secret: enc,
    project: PROJECT,
    subject: "gateway",
    ttlSeconds: 3600,
    scopes: ["pstn.gateway"],
  });
  const created = await fetch(`${bl.url}/v1/channels`, {
    method: "POST",
    headers: { authorization: `Bearer ${admin}`, "content-type": "application/json" },
    body: JSON.stringify({ channel_id: CHANNEL }),
  }).then(async (r) => /** @type {{ host_passphrase: string }} */ (await r.json()));
  const passphrase = created.host_passphrase;
  if (!passphrase) throw new Error("CreateChannel gave no host passphrase");

  const connections = Array.from({ length: C }, () => grpcConnection(bl.url, gateway));
  const [first] = connections;
  if (first === undefined) throw new Error("BENCH_LINE_C must be at least 1");

  // --- the line: PARTICIPANTS joins, C at a time ------------------------------------------------
  let joined = 0;
  const joinStarted = performance.now();
  await Promise.all(
    connections.map(async (c, w) => {
      for (let i = w; i < PARTICIPANTS; i += C) {
        const outcome = outcomeOf(
          await c.call(REPORT_LINE, report(uidOf(i), { case: "join", value: { callerId: "***1234" } })),
        );
        if (outcome !== "APPLIED") throw new Error(`join of ${uidOf(i)}: ${outcome}`);
        joined++;
      }
    }),
  );
  const joins = { count: joined, ms: performance.now() - joinStarted };
  log(`${joined} joined in ${joins.ms.toFixed(0)} ms`);

  // --- MuteAll ------------------------------------------------------------------------------------
  let muteNext = true;
  const muteAllPass = async (/** @type {number} */ pass) => {
    await redis.config("SET", "slowlog-log-slower-than", "0");
    await redis.config("SET", "slowlog-max-len", "100000");
    const calls = [];
    for (let i = 0; i < CALLS; i++) {
      const mute = muteNext;
      muteNext = !muteNext;
      const message = toBinary(MuteAllRequestSchema, create(MuteAllRequestSchema, { passphrase, mute }));
      await loopLagMaxMs(bl.metricsUrl);
      await redis.slowlog("RESET");
      const before = await commandStats(redis);
      let answered = false;
      let pingMaxMs = 0;
      const pings = (async () => {
        while (!answered) {
          const t0 = performance.now();
          await pinger.ping();
          pingMaxMs = Math.max(pingMaxMs, performance.now() - t0);
        }
      })();
      const t0 = performance.now();
      const answer = fromBinary(MuteAllResponseSchema, await first.call(MUTE_ALL, message));
      const wallMs = performance.now() - t0;
      answered = true;
      await pings;
      const lagMs = await loopLagMaxMs(bl.metricsUrl);
      const after = await commandStats(redis);
      const entries = /** @type {[number, number, number, string[]][]} */ (await redis.slowlog("GET", "-1"));
      // The script is the longest EVALSHA (or EVAL) of the call; the lease sweep's are short.
      const scripts = entries.filter((e) => /^eval/i.test(e[3]?.[0] ?? ""));
      const scriptUs = Math.max(0, ...scripts.map((e) => e[2]));
      // Every command but this process's own readings.
      const redisUs = entries
        .filter((e) => !/^(slowlog|info|ping|config)$/i.test(e[3]?.[0] ?? ""))
        .reduce((a, e) => a + e[2], 0);
      calls.push({
        pass,
        mute,
        wallMs,
        scriptUs,
        redisUs,
        lagMs,
        pingMaxMs,
        changed: answer.changed,
        unchanged: answer.unchanged,
        scriptCalls: callsBetween(before, after, "evalsha") + callsBetween(before, after, "eval"),
        xadds: callsBetween(before, after, "xadd"),
      });
      log(
        `MuteAll pass ${pass} #${i + 1} mute=${mute}: ${wallMs.toFixed(1)} ms, script ${(scriptUs / 1000).toFixed(1)} ms, ` +
          `loop lag max ${lagMs.toFixed(1)} ms, PING max ${pingMaxMs.toFixed(1)} ms, changed ${answer.changed}`,
      );
      await sleep(100);
    }
    // The same event-loop reading over idle windows as long as a call's median.
    const idle = [];
    const windowMs = Math.max(
      1,
      quantile(
        calls.map((c) => c.wallMs),
        0.5,
      ),
    );
    for (let i = 0; i < CALLS; i++) {
      await loopLagMaxMs(bl.metricsUrl);
      await sleep(windowMs);
      idle.push(await loopLagMaxMs(bl.metricsUrl));
    }
    await redis.config("SET", "slowlog-log-slower-than", "10000");
    await redis.slowlog("RESET");
    return {
      pass,
      calls,
      idleLagMs: idle,
      windowMs,
      streamLength: await redis.xlen(keySchema(PREFIX).pstnEvents(PROJECT, CHANNEL)),
    };
  };

  // --- report rounds ----------------------------------------------------------------------------
  const ownUids = (/** @type {number} */ w) => {
    const mine = [];
    for (let i = w; i < PARTICIPANTS; i += C) mine.push(uidOf(i));
    return mine;
  };
  /** Per worker: the next of its participants, and the next visitor. */
  const turn = connections.map(() => ({ at: 0, visitor: 0 }));
  /** Each participant's mute state as the cells last set it, so every Mute and keypad report changes it. */
  const muted = new Map();
  const nextUid = (/** @type {number} */ w) => {
    const t = turn[w] ?? { at: 0, visitor: 0 };
    const uids = ownUids(w);
    return uids[t.at++ % uids.length] ?? uidOf(0);
  };
  const next = (/** @type {number} */ w) => {
    const uid = nextUid(w);
    const mute = !muted.get(uid);
    muted.set(uid, mute);
    return { uid, mute };
  };
  /** @type {Record<string, (w: number, c: { call: (path: string, message: Uint8Array) => Promise<Buffer> }) => Promise<string | undefined>>} */
  const kinds = {
    Mute: async (w, c) => {
      const { uid, mute } = next(w);
      await c.call(MUTE, toBinary(MuteRequestSchema, create(MuteRequestSchema, { uid, passphrase, mute })));
      return undefined;
    },
    "ReportLine presence": async (w, c) => {
      return outcomeOf(await c.call(REPORT_LINE, report(nextUid(w), { case: "presence", value: {} })));
    },
    "ReportLine keypad mute": async (w, c) => {
      const { uid, mute } = next(w);
      return outcomeOf(await c.call(REPORT_LINE, report(uid, { case: "keypadMute", value: { mute } })));
    },
    "ReportLine join + leave": async (w, c) => {
      const t = turn[w] ?? { at: 0, visitor: 0 };
      const uid = `visitor-${w}-${t.visitor++ % 8}`;
      const j = outcomeOf(await c.call(REPORT_LINE, report(uid, { case: "join", value: { callerId: "" } })));
      const l = outcomeOf(await c.call(REPORT_LINE, report(uid, { case: "leave", value: {} })));
      return `${j}+${l}`;
    },
  };
  const names = Object.keys(kinds);
  const cells = [];
  const cell = async (/** @type {string} */ name, /** @type {number} */ round) => {
    const work = kinds[name];
    if (work === undefined) throw new Error(`no cell ${name}`);
    if (WARMUP > 0) await closedLoop(connections, work, WARMUP);
    await loopLagMaxMs(bl.metricsUrl);
    const ticks = { bl: cpuTicks(bl.pid), redis: cpuTicks(redisServer.pid) };
    const t0 = performance.now();
    const r = await closedLoop(connections, work, SECONDS);
    const seconds = (performance.now() - t0) / 1000;
    const blUs = (cpuTicks(bl.pid) - ticks.bl) * TICK_US;
    const redisUs = (cpuTicks(redisServer.pid) - ticks.redis) * TICK_US;
    const lagMs = await loopLagMaxMs(bl.metricsUrl);
    // A join + leave is two reports.
    const perCall = name === "ReportLine join + leave" ? 2 : 1;
    const calls = r.latencies.length * perCall;
    const result = {
      name,
      round,
      rps: calls / seconds,
      p50: quantile(r.latencies, 0.5),
      p99: quantile(r.latencies, 0.99),
      blUs: blUs / calls,
      redisUs: redisUs / calls,
      lagMs,
      errors: r.errors,
      firstError: r.firstError,
      outcomes: Object.fromEntries(r.outcomes),
      perCall,
    };
    log(
      `round ${round} ${name}: ${result.rps.toFixed(0)} calls/s, p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms, ` +
        `${result.blUs.toFixed(0)} µs CPU/call, loop lag max ${lagMs.toFixed(1)} ms, errors ${r.errors}${r.firstError ? ` (${r.firstError})` : ""}, ${JSON.stringify(result.outcomes)}`,
    );
    cells.push(result);
  };

  const passes = [await muteAllPass(1)];
  for (let round = 1; round <= ROUNDS; round++) {
    for (let i = 0; i < names.length; i++) await cell(names[(i + round - 1) % names.length] ?? "Mute", round);
  }
  for (let pass = 2; pass <= PASSES; pass++) passes.push(await muteAllPass(pass));

  const stallAfter = stallProbe(SERVER_CPU, LOAD_CPU);
  log(`stall probe after: ${JSON.stringify(stallAfter)}`);
  for (const c of connections) c.close();
  redis.disconnect();
  pinger.disconnect();
  const errorLines = readFileSync(bl.logFile, "utf8")
    .split("\n")
    .filter((l) => /"level":(50|60)/.test(l)).length;
  await servers.stopAll();

  const redisVersion =
    /v=(\S+)/.exec(execFileSync("redis-server", ["--version"], { encoding: "utf8" }))?.[1] ?? "unknown";
  const md = render({
    joins,
    passes,
    cells,
    stallBefore,
    stallAfter,
    redisVersion,
    errorLines,
    startedAt,
    loadStart,
    settings: { participants: PARTICIPANTS, calls: CALLS, warmup: WARMUP, seconds: SECONDS, rounds: ROUNDS, c: C },
    pinning: SERVER_CPU
      ? `redis-server and boardline on CPU ${SERVER_CPU}; this process (every client) on CPU ${LOAD_CPU}`
      : "none (one CPU)",
  });
  writeSection("pstn-line", md, log);
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
