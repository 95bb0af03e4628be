/**
 * Issue 24, part 1: the mute against floor+redis, alone and quickly — boardline's JSON mute
 * (`POST /v1/channel/pstn/mute`, wrk) and gRPC Mute (`/channel.v1.PstnService/Mute`, h2load, one stream per
 * connection) at c16, beside bench/floor.mjs with FLOOR_WORK=redis (the transport plus the mute's one Redis
 * write: the anchor), and optionally beside another build of boardline ("before"), in one run:
 *
 *   npm run build && node bench/mute-profile.mjs [--profile] [--profile-only] [--costs] [--costs-only]
 *
 * What runs, all on loopback, every process started and stopped here: a redis-server of its own (no
 * persistence), seeded by bench/setup.mjs (one channel, its host passphrase, one JWT); boardline
 * (dist/src/main.js, the package's V8 flags, NODE_ENV=production, GUESS_LIMIT=0), floor+redis, and with
 * BENCH_BEFORE a second boardline built from that git ref — all pinned to the first allowed CPU, with
 * Redis, as bench/run.sh pins them; this process, wrk and h2load on the second. The stall probe
 * (bench/stall.mjs) before and after the cells.
 *
 * Cells: BENCH_RUNS rounds; each round runs JSON then gRPC, and per protocol every target once, the
 * targets' order rotating from round to round (so drift and position hit each alike); each cell is a
 * BENCH_WARMUP s warm-up, then BENCH_SECONDS s measured. Per cell: req/s, p50, p99 (wrk's histogram; for
 * h2load nearest-rank over its per-request log, bench/collect.mjs), and the CPU the target and Redis
 * used per response (/proc/<pid>/stat). The summary: medians over the rounds, and each target's ratio to
 * floor+redis (the target: req/s ≥ 0.9×, p99 ≤ 1.3×), and the ratio of CPU per call (server + Redis, the
 * median of the per-round sums) that req/s follows on a saturated CPU — what to compare when the stall
 * probe says the machine itself took the CPU away.
 *
 * --profile: afterwards, a boardline of its own with `--cpu-prof`, one c16 cell of each protocol
 * (BENCH_SECONDS each, a fresh process per protocol), and its self time over the measured seconds
 * (bench/cpu-profile.mjs) grouped by package (our src, ioredis, protovalidate, prom-client, connect, node
 * internals, …) and the top functions.
 * --profile-only: only that.
 * --costs: afterwards, floor+redis and boardline (and "before") started afresh with `--trace-gc-nvp`, and per
 * protocol one c16 cell each under `strace -f -c` (when the machine has strace): the system calls each makes per
 * response, by name, and the bytes V8 allocated and promoted per response (the sums of the GC trace's
 * `allocated=` and `promoted=` over the cell). What a response costs outside the profile's self time: a write to
 * a socket is a system call whatever the code around it, and the garbage a call leaves is paid for by the GC.
 * --costs-only: only that.
 *
 * Environment: BENCH_SECONDS (5), BENCH_WARMUP (1), BENCH_RUNS (3), BENCH_BEFORE (a git ref: its tree is
 * built in the work directory with this checkout's node_modules and run as "before"), BENCH_TOP (25
 * functions), BENCH_KEEP (keep the work directory), BENCH_RESULTS_OUT (write the summary as JSON there),
 * BENCH_COSTS_OUT (write --costs' rows as JSON there).
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { cpuTicks, freePort, median, nodeFlags, Servers, splitCpus, stallProbe, TICK_US } from "./processes.mjs";
import { summarizeProfile } from "./cpu-profile.mjs";

const env = process.env;
const SECONDS = Number(env.BENCH_SECONDS ?? 5);
const WARMUP = Number(env.BENCH_WARMUP ?? 1);
const RUNS = Number(env.BENCH_RUNS ?? 3);
const TOP = Number(env.BENCH_TOP ?? 25);
const PROFILE = process.argv.includes("--profile") || process.argv.includes("--profile-only");
const COSTS = process.argv.includes("--costs") || process.argv.includes("--costs-only");
const CELLS = !process.argv.includes("--profile-only") && !process.argv.includes("--costs-only");
const PREFIX = "bl:";
const MUTE_PATH = "/v1/channel/pstn/mute";
const GRPC_MUTE = "/channel.v1.PstnService/Mute";

const WORK = mkdtempSync(join(os.tmpdir(), "boardline-bench-mute-"));
const cpus = splitCpus();
const servers = new Servers({ work: WORK, cpu: cpus.serverCpu });
const log = (...args) => console.error(`[bench:mute ${new Date().toISOString().slice(11, 19)}]`, ...args);
const fmt = (n, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : "—");

// --- load generators ---------------------------------------------------------------------------
/** One wrk or h2load run of `seconds` against a target's protocol; the cell's line from bench/collect.mjs. */
function load(target, proto, seconds, out) {
  const name = join(WORK, `${out}-${randomBytes(3).toString("hex")}`);
  if (proto === "JSON") {
    const url = `${target.http}${MUTE_PATH}`;
    const args = [
      "-t",
      "1",
      "-c",
      "16",
      "-d",
      `${seconds}s`,
      "--timeout",
      "5s",
      "--latency",
      "-s",
      "bench/post.lua",
      url,
    ];
    const extra = { BENCH_BODY: join(WORK, "mute.json"), BENCH_AUTH: join(WORK, "jwt.txt"), BENCH_OUT: `${name}.json` };
    const r = spawnSync("wrk", args, { env: { ...env, ...extra }, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`wrk failed: ${r.stderr}`);
    return collect(["wrk", `${name}.json`]);
  }
  const jwt = readFileSync(join(WORK, "jwt.txt"), "utf8").trim();
  const args = [
    "-t",
    "1",
    "-c",
    "16",
    "-m",
    "1",
    "-d",
    join(WORK, "mute.grpc"),
    "-H",
    "content-type: application/grpc",
  ];
  args.push("-H", "te: trailers", "-H", `authorization: Bearer ${jwt}`, "-D", String(seconds));
  args.push(`--log-file=${name}.log`, `${target.h2}${GRPC_MUTE}`);
  const r = spawnSync("h2load", args, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`h2load failed: ${r.stderr}`);
  writeFileSync(`${name}.out`, r.stdout);
  return collect(["h2load", `${name}.out`, `${name}.log`]);
}

function collect(args) {
  return JSON.parse(execFileSync(process.execPath, ["bench/collect.mjs", ...args], { encoding: "utf8" }));
}

/** A warm-up, then the measured run with the CPU the target and Redis used per response. */
function cell(target, proto, redisPid) {
  if (WARMUP > 0) load(target, proto, WARMUP, "warmup");
  const before = { server: cpuTicks(target.pid), redis: cpuTicks(redisPid) };
  const r = load(target, proto, SECONDS, `${target.name}-${proto}`);
  const responses = r.requests;
  const c = {
    target: target.name,
    proto,
    rps: r.rps,
    p50: r.p50_ms,
    p99: r.p99_ms,
    serverUs: ((cpuTicks(target.pid) - before.server) * TICK_US) / responses,
    redisUs: ((cpuTicks(redisPid) - before.redis) * TICK_US) / responses,
    failures: (r.non2xx ?? 0) + (r.errors ?? 0) + (r.failed ?? 0),
  };
  log(
    `${c.target} ${proto}: ${fmt(c.rps)} req/s, p50 ${fmt(c.p50, 2)} ms, p99 ${fmt(c.p99, 2)} ms, ` +
      `CPU ${fmt(c.serverUs)} + ${fmt(c.redisUs)} µs/call (server + Redis), failures ${c.failures}`,
  );
  return c;
}

// --- servers -----------------------------------------------------------------------------------
async function waitForPort(port, child) {
  for (let i = 0; i < 150; i++) {
    if (child.exitCode !== null) throw new Error(`a server exited at start-up (logs in ${WORK})`);
    const ok = await new Promise((done) => {
      const s = net.connect(port, "127.0.0.1", () => done(s.end() && true)).on("error", () => done(false));
    });
    if (ok) return;
    await sleep(100);
  }
  throw new Error(`nothing listening on ${port} after 15 s`);
}

async function startFloorRedis(redisUrl, nodeArgs = [], name = "floor+redis") {
  const [port, grpcPort] = [await freePort(), await freePort()];
  const s = servers.spawn(name, [process.execPath, ...nodeFlags(), ...nodeArgs, "bench/floor.mjs"], {
    PORT: String(port),
    GRPC_PORT: String(grpcPort),
    FLOOR_WORK: "redis",
    REDIS_URL: redisUrl,
    REDIS_KEY_PREFIX: PREFIX,
  });
  await waitForPort(grpcPort, s.child);
  await waitForPort(port, s.child);
  const h2 = `http://127.0.0.1:${grpcPort}`;
  return { name: "floor+redis", pid: s.pid, http: `http://127.0.0.1:${port}`, h2, logFile: s.logFile, stop: s.stop };
}

async function startBoardline(name, serverEnv, nodeArgs = [], root = ".") {
  const bl = await servers.startBoardline(name, serverEnv, nodeArgs, root);
  return { name, pid: bl.pid, http: bl.url, h2: bl.url, logFile: bl.logFile, stop: bl.stop };
}

/** `ref`'s tree, built (tsc) in the work directory with this checkout's node_modules; its directory. */
function buildRef(ref) {
  const dir = join(WORK, "before");
  mkdirSync(dir);
  const tar = execFileSync("git", ["archive", ref], { maxBuffer: 1 << 30 });
  execFileSync("tar", ["-x", "-C", dir], { input: tar });
  symlinkSync(resolve("node_modules"), join(dir, "node_modules"));
  execFileSync(process.execPath, [resolve("node_modules/typescript/bin/tsc"), "-p", "tsconfig.build.json"], {
    cwd: dir,
    stdio: "inherit",
  });
  return dir;
}

// --- the run -------------------------------------------------------------------------------------
async function measureCells(targets, redisPid) {
  const cells = [];
  for (let round = 0; round < RUNS; round++) {
    for (const proto of ["JSON", "gRPC"]) {
      for (let i = 0; i < targets.length; i++) {
        cells.push({ ...cell(targets[(i + round) % targets.length], proto, redisPid), round });
      }
    }
  }
  return cells;
}

function summarize(cells, targets) {
  const rows = [];
  for (const proto of ["JSON", "gRPC"]) {
    const of = (name) => cells.filter((c) => c.proto === proto && c.target === name);
    const anchor = of("floor+redis");
    const a = {
      rps: median(anchor.map((c) => c.rps)),
      p99: median(anchor.map((c) => c.p99)),
      cpu: median(anchor.map((c) => c.serverUs + c.redisUs)),
    };
    for (const t of targets) {
      const cs = of(t.name);
      const m = (k) => median(cs.map((c) => c[k]));
      rows.push({
        target: t.name,
        proto,
        rps: m("rps"),
        rpsEach: cs.map((c) => Math.round(c.rps)),
        p50: m("p50"),
        p99: m("p99"),
        p99Each: cs.map((c) => c.p99),
        serverUs: m("serverUs"),
        redisUs: m("redisUs"),
        rpsRatio: m("rps") / a.rps,
        p99Ratio: m("p99") / a.p99,
        // The servers' CPU is saturated at c16, so req/s ≈ 1 ÷ CPU per call (server + Redis): the ratio
        // the CPU costs predict, which a machine that stalls the CPU (the stall probe) moves far less.
        cpuRatio: a.cpu / median(cs.map((c) => c.serverUs + c.redisUs)),
        failures: cs.reduce((s, c) => s + c.failures, 0),
      });
    }
  }
  return rows;
}

function printSummary(rows, [before, after]) {
  const stalls = (s) =>
    `${fmt(s.stalled_pct, 1)} % of 5 s stalled, ${s.gaps_over_2ms} gaps > 2 ms, longest ${fmt(s.max_gap_ms, 1)} ms`;
  const lines = [
    `Medians of ${RUNS} runs, ${SECONDS} s cells, c16; ratios against floor+redis of the same run (target: req/s ≥ 0.9×, p99 ≤ 1.3×).`,
    `Stall probe (bench/stall.mjs) before the cells: ${stalls(before)}; after: ${stalls(after)}.`,
    "",
    "| target | protocol | req/s (each run) | req/s median | ÷ floor+redis | p50 / p99 ms | p99 ÷ floor+redis | CPU µs/call server + Redis | floor+redis CPU ÷ this CPU | failures |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ...rows.map(
      (r) =>
        `| ${r.target} | ${r.proto} | ${r.rpsEach.join(", ")} | ${fmt(r.rps)} | ${fmt(r.rpsRatio, 2)}× | ` +
        `${fmt(r.p50, 2)} / ${fmt(r.p99, 2)} | ${fmt(r.p99Ratio, 2)}× | ${fmt(r.serverUs)} + ${fmt(r.redisUs)} | ${fmt(r.cpuRatio, 2)}× | ${r.failures} |`,
    ),
  ];
  console.log(lines.join("\n"));
}

/** A boardline with `--cpu-prof` under one protocol's c16 load; its profile summarized. */
async function profile(proto, serverEnv) {
  const dir = join(WORK, `profile-${proto}`);
  mkdirSync(dir);
  const bl = await startBoardline(`boardline-prof-${proto}`, serverEnv, ["--cpu-prof", `--cpu-prof-dir=${dir}`]);
  if (WARMUP > 0) load(bl, proto, WARMUP, "warmup");
  const from = process.hrtime.bigint() / 1000n;
  const r = load(bl, proto, SECONDS, `prof-${proto}`);
  const window = [Number(from), Number(process.hrtime.bigint() / 1000n)]; // the profile's clock
  await bl.stop(); // the profile is written at exit
  const file = readdirSync(dir).find((f) => f.endsWith(".cpuprofile"));
  if (file === undefined) throw new Error(`no .cpuprofile written in ${dir}`);
  console.log(`\n### CPU profile, ${proto} mute, c16 (${fmt(r.rps)} req/s under --cpu-prof)\n`);
  console.log(
    summarizeProfile(JSON.parse(readFileSync(join(dir, file), "utf8")), {
      top: TOP,
      calls: r.requests,
      window,
    }),
  );
}

// --- what a response costs outside the profile: system calls and garbage ------------------------------
/** V8's own account in a `--trace-gc-nvp` log so far: bytes allocated and promoted, summed over its GCs. */
function gcTotals(logFile) {
  let allocated = 0;
  let promoted = 0;
  for (const m of readFileSync(logFile, "utf8").matchAll(/\ballocated=(\d+).*?\bpromoted=(\d+)/g)) {
    allocated += Number(m[1]);
    promoted += Number(m[2]);
  }
  return { allocated, promoted };
}

/** `strace -f -c` attached to every thread of `pid` until stopped; its counts per system call. */
function straceCounts(pid, out) {
  const tids = readdirSync(`/proc/${pid}/task`).flatMap((t) => ["-p", t]);
  const child = spawn("strace", ["-f", "-c", "-o", out, ...tids], { stdio: "ignore" });
  return async () => {
    const exited = new Promise((done) => child.once("exit", done));
    child.kill("SIGINT");
    await exited;
    const counts = new Map();
    for (const line of readFileSync(out, "utf8").split("\n")) {
      const f = line.trim().split(/\s+/); // % time, seconds, usecs/call, calls, [errors], syscall
      if (f.length >= 5 && /^\d/.test(f[0] ?? "") && f.at(-1) !== "total") counts.set(f.at(-1), Number(f[3]));
    }
    return counts;
  };
}

async function measureCosts(serverEnv, redisUrl) {
  const strace = spawnSync("strace", ["-V"]).status === 0;
  if (!strace) log("no strace on this machine: the costs are the GC's only");
  const targets = [await startFloorRedis(redisUrl, ["--trace-gc-nvp"], "floor+redis-costs")];
  targets.push(await startBoardline("boardline-costs", serverEnv, ["--trace-gc-nvp"]));
  if (env.BENCH_BEFORE) {
    targets.push(await startBoardline("before-costs", serverEnv, ["--trace-gc-nvp"], join(WORK, "before")));
  }
  const rows = [];
  for (const proto of ["JSON", "gRPC"]) {
    for (const t of targets) {
      load(t, proto, Math.max(WARMUP, 1), "warmup");
      await sleep(200);
      const gcBefore = gcTotals(t.logFile);
      const counts = strace ? straceCounts(t.pid, join(WORK, `${t.name}-${proto}.strace`)) : undefined;
      if (counts) await sleep(500); // attached before the load starts
      const r = load(t, proto, SECONDS, `${t.name}-${proto}-costs`);
      const syscalls = counts ? await counts() : new Map();
      await sleep(200);
      const gcAfter = gcTotals(t.logFile);
      const per = (n) => n / r.requests;
      rows.push({
        target: t.name.replace(/-costs$/, ""),
        proto,
        responses: r.requests,
        syscalls: Object.fromEntries([...syscalls].filter(([, n]) => per(n) >= 0.05).map(([k, n]) => [k, per(n)])),
        syscallsTotal: per([...syscalls.values()].reduce((a, b) => a + b, 0)),
        allocatedKb: per(gcAfter.allocated - gcBefore.allocated) / 1024,
        promotedB: per(gcAfter.promoted - gcBefore.promoted),
      });
    }
  }
  for (const t of targets) await t.stop();
  const lines = [
    `\n### Per response, c16, ${SECONDS} s cells (system calls under strace -f -c; bytes from --trace-gc-nvp)\n`,
    "| target | protocol | responses | system calls (≥ 0.05 each) | all | KB allocated | B promoted |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    ...rows.map(
      (r) =>
        `| ${r.target} | ${r.proto} | ${r.responses} | ${
          Object.entries(r.syscalls)
            .sort((a, b) => b[1] - a[1])
            .map(([k, n]) => `${k} ${fmt(n, 2)}`)
            .join(", ") || "—"
        } | ${strace ? fmt(r.syscallsTotal, 2) : "—"} | ${fmt(r.allocatedKb, 1)} | ${fmt(r.promotedB)} |`,
    ),
  ];
  console.log(lines.join("\n"));
  if (env.BENCH_COSTS_OUT) writeFileSync(env.BENCH_COSTS_OUT, JSON.stringify(rows, null, 2));
}

async function main() {
  const redis = await servers.startRedis();
  const secret = randomBytes(32).toString("hex");
  const seedEnv = { ...env, REDIS_URL: redis.url, REDIS_KEY_PREFIX: PREFIX, JWT_SECRET: secret, OUT_DIR: WORK };
  execFileSync(process.execPath, ["bench/setup.mjs"], { env: seedEnv, stdio: ["ignore", "ignore", "inherit"] });
  const serverEnv = { REDIS_URL: redis.url, REDIS_KEY_PREFIX: PREFIX, JWT_SECRET: secret };
  if (CELLS) {
    const targets = [await startFloorRedis(redis.url), await startBoardline("boardline", serverEnv)];
    if (env.BENCH_BEFORE) {
      log(`building ${env.BENCH_BEFORE} as "before"`);
      targets.push(await startBoardline(`before (${env.BENCH_BEFORE})`, serverEnv, [], buildRef(env.BENCH_BEFORE)));
    }
    const stall = stallProbe(cpus.serverCpu, cpus.loadCpu);
    log(`stall probe: ${JSON.stringify(stall)}`);
    const rows = summarize(await measureCells(targets, redis.pid), targets);
    const stallAfter = stallProbe(cpus.serverCpu, cpus.loadCpu);
    printSummary(rows, [stall, stallAfter]);
    if (env.BENCH_RESULTS_OUT) {
      writeFileSync(env.BENCH_RESULTS_OUT, JSON.stringify({ stall, stallAfter, rows }, null, 2));
    }
    for (const t of targets) await t.stop?.();
  }
  if (PROFILE) for (const proto of ["JSON", "gRPC"]) await profile(proto, serverEnv);
  if (COSTS) {
    if (env.BENCH_BEFORE && !CELLS) {
      log(`building ${env.BENCH_BEFORE} as "before"`);
      buildRef(env.BENCH_BEFORE);
    }
    await measureCosts(serverEnv, redis.url);
  }
}

try {
  log(`pinning: servers + Redis on CPU ${cpus.serverCpu || "any"}, load on CPU ${cpus.loadCpu || "any"}; work ${WORK}`);
  await main();
} finally {
  await servers.stopAll();
  if (env.BENCH_KEEP) log(`work directory kept: ${WORK}`);
  else rmSync(WORK, { recursive: true, force: true });
}
