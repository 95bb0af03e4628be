/**
 * The conversion queue: what accepting a ConvertFile costs one instance, and how long an accepted request
 * waits for its submission under a burst. Part of `npm run bench` (~3 min); `npm run bench:conversion-queue`
 * runs only it. Writes its section of docs/performance.md (bench/report/conversion-queue.mjs; not with
 * BENCH_NO_WRITE=1) and prints it.
 *
 * What runs, all on loopback, every process started and stopped here:
 *   - per part (and per case of the burst), a redis-server of its own (no persistence) and boardline
 *     (dist/src/main.js, the package's V8 flags, NODE_ENV=production, GUESS_LIMIT=0), pinned to the first
 *     allowed CPU when there are two; this process, wrk and the conversion simulator (forked:
 *     bench/lib/watch-simulator.mjs) on the second;
 *   - the stall probe (bench/lib/stall.mjs) before and after.
 *
 * Accepted calls a second: one project (the default `conversion_qps`, 1), CONVERSION_QUEUE_MAX at its
 * largest (1 000 000, so no cell is ever refused), the simulator without a creates limit. wrk at
 * BENCH_QUEUE_C (16) keep-alive HTTP/1.1 connections, JSON routes, BENCH_WARMUP s of warm-up then
 * BENCH_SECONDS s per cell, BENCH_QUEUE_ROUNDS (2) rounds whose order turns each round, of:
 *   - Mute (the anchor: one Redis write; the channel's host passphrase);
 *   - ConvertFile queued: one body with `"reuse": false`, so every call writes a record and queues a new
 *     task (the queue grows by every call; the submitter takes one a second);
 *   - ConvertFile reused: an identical request without `reuse`, of another document, whose task ended
 *     before the cells: every call is answered with that task.
 * Each kind is checked once with curl's equivalent before the cells (its status and answer). Per cell:
 * requests a second, p50/p99, boardline's and Redis's CPU time per call (/proc/<pid>/stat), Redis
 * commands and script calls per call (INFO commandstats; commands a script runs count too).
 *
 * A burst, per case of BENCH_QUEUE_CASES ("1x0,3x0,1x100": instances × how long the simulator takes to
 * answer a create, in ms — one instance, three on one Redis, one instance with a backend 100 ms away): one project
 * with `conversion_qps` BENCH_QUEUE_QPS (50), the simulator holding the project to the same creates a
 * second (its token bucket), BENCH_QUEUE_BURSTS (2) bursts of BENCH_QUEUE_BURST (200) ConvertFiles of
 * distinct documents sent at once (fetch, one connection each, spread over the instances in turn). Per
 * request: the time from its 200 answer (read here) to the simulator's accepted create of its document
 * (`at`, on the same clock); against a perfect pacer (each request submitted at its answer or one pace
 * after the previous submission, whichever is later; pace = ceil(1000 / qps × 1.03) ms, as boardline
 * paces); the effective submissions a second, the creates the simulator refused, the submitters' own
 * outcomes (`boardline_conversion_submissions_total`).
 *
 * Environment: BENCH_SECONDS (5), BENCH_WARMUP (1), BENCH_QUEUE_C (16), BENCH_QUEUE_ROUNDS (2),
 * BENCH_QUEUE_QPS (50), BENCH_QUEUE_BURST (200), BENCH_QUEUE_BURSTS (2), BENCH_QUEUE_CASES ("1x0,3x0,1x100"),
 * BENCH_NO_WRITE, BENCH_KEEP (keep the work directory with the logs).
 */
import { execFileSync, fork, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { keySchema } from "../lib/boardline.mjs";
import { seedFollowProject } from "../lib/follow-setup.mjs";
import { cpuTicks, procKb, Servers, splitCpus, stallProbe, TICK_US } from "../lib/processes.mjs";
import { within } from "../lib/watch-clients.mjs";
import { render } from "../report/conversion-queue.mjs";
import { writeSection } from "../report/document.mjs";

const env = process.env;
const SECONDS = Number(env.BENCH_SECONDS ?? 5);
const WARMUP = Number(env.BENCH_WARMUP ?? 1);
const C = Number(env.BENCH_QUEUE_C ?? 16);
const ROUNDS = Number(env.BENCH_QUEUE_ROUNDS ?? 2);
const QPS = Number(env.BENCH_QUEUE_QPS ?? 50);
const BURST = Number(env.BENCH_QUEUE_BURST ?? 200);
const BURSTS = Number(env.BENCH_QUEUE_BURSTS ?? 2);
const CASES = (env.BENCH_QUEUE_CASES ?? "1x0,3x0,1x100").split(",").map((c) => {
  const [instances = 0, delayMs = -1] = c.split("x").map(Number);
  if (!(instances >= 1 && delayMs >= 0)) throw new Error(`BENCH_QUEUE_CASES: "${c}" is not <instances>x<delay ms>`);
  return { instances, delayMs };
});
if (!(C >= 1 && ROUNDS >= 1 && QPS > 0 && BURST >= 2 && BURSTS >= 1)) {
  throw new Error("BENCH_QUEUE_*: C, ROUNDS and BURSTS at least 1, QPS positive, BURST at least 2");
}
/** CONVERSION_QUEUE_MAX's largest value: the cells queue tens of thousands of requests, none refused. */
const QUEUE_MAX = 1_000_000;
/** boardline's pace (src/services/conversion/pace.ts): a little longer than 1 s / qps. */
const PACE_MS = Math.ceil((1000 / QPS) * 1.03);
/** One simulator step: a task ends 4 steps after its create, so the follower's work stays small. */
const PROGRESS_MS = 500;
const CONVERT = "/v1/whiteboard/fileconvert";
const MUTE = "/v1/channel/pstn/mute";

const WORK = mkdtempSync(join(os.tmpdir(), "boardline-bench-queue-"));
const startedAt = new Date();
const loadStart = os.loadavg();
const { serverCpu: SERVER_CPU, loadCpu: LOAD_CPU } = splitCpus();
const servers = new Servers({ work: WORK, cpu: SERVER_CPU });

const log = (...args) => console.error(`[bench:conversion-queue ${new Date().toISOString().slice(11, 19)}]`, ...args);
const fmt = (n, digits = 0) =>
  Number.isFinite(n) ? n.toLocaleString("en-US", { maximumFractionDigits: digits }).replace(/,/g, " ") : "—";

// --- the simulator, in a process of its own (on this process's CPU) ----------------------------------

/**
 * @param {string} sdkToken the token boardline presents
 * @param {number} createsPerSecond the backend's creates a second per project (0: no limit)
 * @param {number} createDelayMs how long after its arrival each create is answered (0: at once)
 * @param {string} name its log file's name
 */
async function startSimulator(sdkToken, createsPerSecond, createDelayMs, name) {
  const child = fork(new URL("../lib/watch-simulator.mjs", import.meta.url), [], {
    env: {
      ...env,
      SIM_SDK_TOKEN: sdkToken,
      SIM_PROGRESS_MS: String(PROGRESS_MS),
      SIM_CREATES_PER_SECOND: String(createsPerSecond),
      SIM_CREATE_DELAY_MS: String(createDelayMs),
    },
    stdio: ["ignore", "ignore", openSync(join(WORK, `${name}.log`), "a"), "ipc"],
  });
  process.once("exit", () => child.kill());
  /** @type {Promise<string>} */
  const ready = new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`the simulator exited (${code})`)));
    child.on("message", (/** @type {{ ready?: string }} */ m) => m.ready && resolve(m.ready));
  });
  if (!(await within(ready, 15_000))) throw new Error("the simulator did not start within 15 s");
  const url = await ready;
  let nextId = 0;
  return {
    url,
    pid: child.pid ?? 0,
    /** Every create it accepted, in order, with its arrival (ms since the epoch); how many it refused. */
    async creates() {
      const id = ++nextId;
      /** @type {Promise<{ creates: { at: number, resource: string, uuid: string }[], refused: number }>} */
      const answer = new Promise((resolve) => {
        const on = (/** @type {any} */ m) => {
          if (m?.id !== id) return;
          child.off("message", on);
          resolve(m);
        };
        child.on("message", on);
        child.send({ id, ask: "creates" });
      });
      if (!(await within(answer, 10_000))) throw new Error("the simulator did not answer within 10 s");
      return answer;
    },
    stop: () => {
      child.disconnect();
      child.kill();
    },
  };
}

// --- calls ---------------------------------------------------------------------------------------------

/** One JSON POST: its status, its answer, and when the answer was read (ms since the epoch). */
async function post(url, token, body) {
  const res = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, at: Date.now() };
}

/** INFO commandstats summed: every command's calls, and the script calls (EVALSHA and EVAL). */
async function commandCounts(/** @type {Redis} */ redis) {
  let all = 0;
  let scripts = 0;
  for (const m of (await redis.info("commandstats")).matchAll(/^cmdstat_(\S+):calls=(\d+)/gm)) {
    all += Number(m[2]);
    if (/^eval/.test(m[1] ?? "")) scripts += Number(m[2]);
  }
  return { all, scripts };
}

/** @param {string} url @param {Record<string, string>} extraEnv @param {number} seconds */
function wrk(url, extraEnv, seconds) {
  const out = join(WORK, `wrk-${randomBytes(4).toString("hex")}.json`);
  const args = ["-t", "1", "-c", String(C), "-d", `${seconds}s`, "--timeout", "5s", "--latency"];
  args.push("-s", "bench/wrk/post.lua", url);
  const r = spawnSync("wrk", args, { env: { ...env, ...extraEnv, BENCH_OUT: out }, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`wrk failed: ${r.stderr}`);
  return JSON.parse(readFileSync(out, "utf8"));
}

// --- accepted calls a second ----------------------------------------------------------------------------

async function acceptedCalls() {
  const redisServer = await servers.startRedis("redis-calls");
  const project = await seedFollowProject(redisServer.url);
  const sim = await startSimulator(project.sdkToken, 0, 0, "simulator-calls");
  const bl = await servers.startBoardline("boardline-calls", {
    REDIS_URL: redisServer.url,
    JWT_SECRET: project.jwtSecret,
    CONVERSION_API_BASE: sim.url,
    CONVERSION_QUEUE_MAX: String(QUEUE_MAX),
  });
  const redis = new Redis(redisServer.url);
  // seedFollowProject's project, under boardline's default key prefix.
  const queueKey = keySchema("bl:").conversionQueue("bench-proj");
  writeFileSync(join(WORK, "jwt.txt"), project.token);
  const bodies = {
    Mute: { uid: "pstn-1", passphrase: project.passphrase, mute: true },
    "ConvertFile queued": {
      resource_url: "https://docs.example.com/bench/queued.pptx",
      passphrase: project.passphrase,
      conversion_type: "static",
      reuse: false,
    },
    "ConvertFile reused": {
      resource_url: "https://docs.example.com/bench/reused.pptx",
      passphrase: project.passphrase,
      conversion_type: "static",
    },
  };
  /** @type {Record<string, string>} */
  const paths = { Mute: MUTE, "ConvertFile queued": CONVERT, "ConvertFile reused": CONVERT };
  for (const [name, body] of Object.entries(bodies)) writeFileSync(join(WORK, `${name}.json`), JSON.stringify(body));

  // The reused document's task, ended before the cells: every reused call reads the same ended task.
  const first = await post(`${bl.url}${CONVERT}`, project.token, bodies["ConvertFile reused"]);
  if (first.status !== 200) throw new Error(`ConvertFile answered ${first.status}: ${first.text}`);
  const reusedUuid = JSON.parse(first.text).task_uuid;
  let reusedStatus = "";
  for (let i = 0; i < 100 && reusedStatus !== "Finished"; i++) {
    await sleep(100);
    const got = await fetch(`${bl.url}${CONVERT}/${reusedUuid}`, {
      headers: { authorization: `Bearer ${project.token}` },
    });
    reusedStatus = /** @type {{ status: string }} */ (await got.json()).status;
  }
  if (reusedStatus !== "Finished") throw new Error(`the reused task is ${reusedStatus}, not Finished, after 10 s`);

  // Every kind answers as its cells need, before they run.
  /** @type {string[]} */
  const checks = [];
  for (const [name, body] of Object.entries(bodies)) {
    const r = await post(`${bl.url}${paths[name]}`, project.token, body);
    checks.push(`${name}: \`POST ${paths[name]}\` → HTTP ${r.status} \`${r.text.slice(0, 160)}\``);
    if (r.status !== 200) throw new Error(`${name} answered ${r.status}: ${r.text}`);
    const answer = JSON.parse(r.text);
    if (name === "ConvertFile queued" && !(answer.status === "Queued" && answer.reused === false))
      throw new Error(`ConvertFile queued answered ${r.text}`);
    if (name === "ConvertFile reused" && !(answer.reused === true && answer.task_uuid === reusedUuid))
      throw new Error(`ConvertFile reused answered ${r.text}`);
  }

  const rssIdle = procKb(bl.pid, "VmRSS") / 1024;
  const usedBefore = Number(/used_memory:(\d+)/.exec(await redis.info("memory"))?.[1]);
  const names = Object.keys(bodies);
  const cells = [];
  for (let round = 1; round <= ROUNDS; round++) {
    for (let i = 0; i < names.length; i++) {
      const name = names[(i + round - 1) % names.length] ?? "Mute";
      const url = `${bl.url}${paths[name]}`;
      const cellEnv = { BENCH_BODY: join(WORK, `${name}.json`), BENCH_AUTH: join(WORK, "jwt.txt") };
      if (WARMUP > 0) wrk(url, cellEnv, WARMUP);
      const queuedBefore = await redis.zcard(queueKey);
      const counts = await commandCounts(redis);
      const ticks = { bl: cpuTicks(bl.pid), redis: cpuTicks(redisServer.pid) };
      const w = wrk(url, cellEnv, SECONDS);
      const blUs = (cpuTicks(bl.pid) - ticks.bl) * TICK_US;
      const redisUs = (cpuTicks(redisServer.pid) - ticks.redis) * TICK_US;
      const after = await commandCounts(redis);
      const queuedAfter = await redis.zcard(queueKey);
      // This process's own INFO (one each side) is not the cell's.
      const commands = after.all - counts.all - 1;
      const cell = {
        name,
        round,
        rps: w.requests / (w.duration_us / 1e6),
        p50: w.latency_us.p50 / 1000,
        p99: w.latency_us.p99 / 1000,
        blUs: blUs / w.requests,
        redisUs: redisUs / w.requests,
        commands: commands / w.requests,
        scripts: (after.scripts - counts.scripts) / w.requests,
        errors: Object.values(w.errors).reduce((a, b) => a + b, 0),
        queued: queuedAfter,
        queuedDuring: queuedAfter - queuedBefore,
        rssMb: procKb(bl.pid, "VmRSS") / 1024,
      };
      log(
        `round ${round} ${name}: ${fmt(cell.rps)} req/s, p50 ${fmt(cell.p50, 2)} ms, p99 ${fmt(cell.p99, 2)} ms, ` +
          `${fmt(cell.blUs)} / ${fmt(cell.redisUs)} µs CPU per call, ${fmt(cell.commands, 1)} Redis commands per call, ` +
          `errors ${cell.errors}, queue ${fmt(queuedAfter)}`,
      );
      cells.push(cell);
    }
  }
  const queued = await redis.zcard(queueKey);
  const usedAfter = Number(/used_memory:(\d+)/.exec(await redis.info("memory"))?.[1]);
  const errorLines = readFileSync(bl.logFile, "utf8")
    .split("\n")
    .filter((l) => /"level":(50|60)/.test(l)).length;
  redis.disconnect();
  sim.stop();
  await servers.stopAll();
  return {
    cells,
    checks,
    rssIdle,
    queued,
    // Every queued record and its place, over what Redis held before the cells (the reused task, the channel).
    redisKbPerQueued: (usedAfter - usedBefore) / 1024 / Math.max(1, queued),
    errorLines,
  };
}

// --- a burst of distinct requests ----------------------------------------------------------------------

/** The submissions the instances counted so far, by outcome. */
async function submissions(/** @type {string[]} */ metricsUrls) {
  /** @type {Record<string, number>} */
  const byOutcome = {};
  for (const url of metricsUrls) {
    const text = await fetch(`${url}/metrics`).then((r) => r.text());
    for (const m of text.matchAll(/^boardline_conversion_submissions_total\{outcome="([^"]+)"\} (\S+)/gm)) {
      byOutcome[m[1] ?? ""] = (byOutcome[m[1] ?? ""] ?? 0) + Number(m[2]);
    }
  }
  return byOutcome;
}

/** @param {{ instances: number, delayMs: number }} c */
async function burstCase({ instances, delayMs }) {
  const name = `${instances}x${delayMs}`;
  const redisServer = await servers.startRedis(`redis-burst-${name}`);
  const project = await seedFollowProject(redisServer.url, { conversionQps: QPS });
  const sim = await startSimulator(project.sdkToken, QPS, delayMs, `simulator-burst-${name}`);
  const bls = [];
  for (let i = 0; i < instances; i++) {
    bls.push(
      await servers.startBoardline(`boardline-burst-${name}-${i}`, {
        REDIS_URL: redisServer.url,
        JWT_SECRET: project.jwtSecret,
        CONVERSION_API_BASE: sim.url,
      }),
    );
  }
  const bursts = [];
  for (let b = 1; b <= BURSTS; b++) {
    const tag = `${name}-${b}-${randomBytes(3).toString("hex")}`;
    const resourceOf = (/** @type {number} */ k) => `https://docs.example.com/burst/${tag}/${k}.pptx`;
    const before = {
      creates: (await sim.creates()).creates.length,
      subs: await submissions(bls.map((x) => x.metricsUrl)),
    };
    const refusedBefore = (await sim.creates()).refused;
    const sentAt = Date.now();
    const answers = await Promise.all(
      Array.from({ length: BURST }, (_, k) =>
        post(`${bls[k % bls.length]?.url}${CONVERT}`, project.token, {
          resource_url: resourceOf(k),
          passphrase: project.passphrase,
          conversion_type: "static",
        }),
      ),
    );
    const refusedAnswers = answers.filter((a) => a.status !== 200);
    if (refusedAnswers.length > 0)
      throw new Error(
        `${refusedAnswers.length} ConvertFiles answered ${refusedAnswers[0]?.status}: ${refusedAnswers[0]?.text}`,
      );
    // Every request submitted: at most the ideal time to drain, three times over, and 30 s.
    const deadline = Date.now() + 3 * BURST * (PACE_MS + delayMs) + 30_000;
    /** @type {{ at: number, resource: string }[]} */
    let created = [];
    let refused = 0;
    for (;;) {
      const c = await sim.creates();
      created = c.creates.slice(before.creates).filter((x) => x.resource.includes(`/burst/${tag}/`));
      refused = c.refused - refusedBefore;
      if (created.length >= BURST || Date.now() > deadline) break;
      await sleep(100);
    }
    if (created.length < BURST) throw new Error(`only ${created.length} of ${BURST} requests were submitted in time`);
    const createdAt = new Map(created.map((c) => [c.resource, c.at]));
    // The queue is first come, first served: the creates' order is the order the queue took the requests in.
    const order = created.map((c) => c.resource);
    const answeredAt = new Map(answers.map((a, k) => [resourceOf(k), a.at]));
    // A perfect pacer: each request at its answer or one pace after the previous submission, whichever is later.
    let idealAt = Number.NEGATIVE_INFINITY;
    const requests = order.map((resource) => {
      const answered = answeredAt.get(resource) ?? Number.NaN;
      idealAt = Math.max(answered, idealAt + PACE_MS);
      const at = createdAt.get(resource) ?? Number.NaN;
      return { waitMs: at - answered, idealWaitMs: idealAt - answered, lateMs: at - idealAt };
    });
    const firstAt = created[0]?.at ?? Number.NaN;
    const lastAt = created[created.length - 1]?.at ?? Number.NaN;
    // Apart: how soon the head went out, and the rate once every answer was read (no accepts competing).
    const firstAnswerAt = Math.min(...answers.map((a) => a.at));
    const lastAnswerAt = Math.max(...answers.map((a) => a.at));
    const afterAnswers = created.filter((c) => c.at > lastAnswerAt);
    const afterFirst = afterAnswers[0]?.at ?? Number.NaN;
    const positions = answers.map((a) => JSON.parse(a.text).queue_position);
    // The last creates' answers may still be on their way (a slow backend): their outcomes counted first.
    let subs = await submissions(bls.map((x) => x.metricsUrl));
    const counted = () => Object.entries(subs).reduce((a, [k, n]) => a + n - (before.subs[k] ?? 0), 0);
    for (let i = 0; i < 50 && counted() < BURST + refused; i++) {
      await sleep(100);
      subs = await submissions(bls.map((x) => x.metricsUrl));
    }
    const burst = {
      instances,
      delayMs,
      burst: b,
      requests,
      answerMs: answers.map((a) => a.at - sentAt),
      maxPosition: Math.max(...positions),
      submissionsPerS: ((created.length - 1) * 1000) / (lastAt - firstAt),
      headMs: firstAt - firstAnswerAt,
      afterAnswersPerS:
        afterAnswers.length < 2 ? Number.NaN : ((afterAnswers.length - 1) * 1000) / (lastAt - afterFirst),
      drainMs: lastAt - sentAt,
      refused,
      outcomes: Object.fromEntries(Object.entries(subs).map(([k, n]) => [k, n - (before.subs[k] ?? 0)])),
    };
    const q = (/** @type {number[]} */ xs, /** @type {number} */ p) => {
      const s = [...xs].sort((x, y) => x - y);
      return s[Math.min(s.length - 1, Math.max(0, Math.ceil(p * s.length) - 1))] ?? Number.NaN;
    };
    log(
      `${instances} instance(s), creates answered after ${delayMs} ms, burst ${b}: wait p50 ${fmt(
        q(
          requests.map((r) => r.waitMs),
          0.5,
        ),
      )} ms, ` +
        `p99 ${fmt(
          q(
            requests.map((r) => r.waitMs),
            0.99,
          ),
        )} ms (ideal p99 ${fmt(
          q(
            requests.map((r) => r.idealWaitMs),
            0.99,
          ),
        )} ms); ` +
        `${fmt(burst.submissionsPerS, 1)} submissions/s; refused by the simulator ${refused}; outcomes ${JSON.stringify(burst.outcomes)}`,
    );
    bursts.push(burst);
    await sleep(1000);
  }
  const errorLines = bls
    .map(
      (x) =>
        readFileSync(x.logFile, "utf8")
          .split("\n")
          .filter((l) => /"level":(50|60)/.test(l)).length,
    )
    .reduce((a, b) => a + b, 0);
  sim.stop();
  await servers.stopAll();
  return { instances, delayMs, bursts, errorLines };
}

async function main() {
  const stallBefore = stallProbe(SERVER_CPU, LOAD_CPU);
  log(`stall probe: ${JSON.stringify(stallBefore)}`);
  const calls = await acceptedCalls();
  const cases = [];
  for (const c of CASES) cases.push(await burstCase(c));
  const stallAfter = stallProbe(SERVER_CPU, LOAD_CPU);
  log(`stall probe after: ${JSON.stringify(stallAfter)}`);
  const redisVersion =
    /v=(\S+)/.exec(execFileSync("redis-server", ["--version"], { encoding: "utf8" }))?.[1] ?? "unknown";
  const md = render({
    calls,
    cases,
    stallBefore,
    stallAfter,
    redisVersion,
    startedAt,
    loadStart,
    settings: {
      warmup: WARMUP,
      seconds: SECONDS,
      rounds: ROUNDS,
      c: C,
      qps: QPS,
      paceMs: PACE_MS,
      burst: BURST,
      queueMax: QUEUE_MAX,
    },
    pinning: SERVER_CPU
      ? `redis-server and boardline on CPU ${SERVER_CPU}; wrk, this process (every client) and the simulator on CPU ${LOAD_CPU}`
      : "none (one CPU)",
  });
  writeSection("conversion-queue", md, log);
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
