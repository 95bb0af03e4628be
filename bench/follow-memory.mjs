/**
 * Issue 24, part 4: boardline's memory while it follows many conversions in
 * flight — what grows with the number of tasks followed, in bytes per task.
 *
 * Each case starts its own redis-server, the simulator (every task stays in
 * flight, bench/follow-setup.mjs) and one boardline (the real
 * `dist/src/main.js` with package.json's nodeFlags, NODE_ENV=production,
 * preloaded with bench/gc-probe.cjs). It makes `tasks` conversions by
 * ConvertFile (64 at a time), lets them settle into the follower's steady rhythm
 * (each one polled every 5 s), then over a window reads:
 *
 * - the peak RSS (VmHWM, reset by `clear_refs 5` when the creation and when the window
 *   begins, as bench/run.sh resets it after each cell's warm-up) and VmRSS each second;
 * - the polls made (`boardline_conversion_poll_lateness_seconds_count`), and from V8's own
 *   account (`--trace-gc-nvp`) the bytes allocated and promoted to the old generation per
 *   poll, the scavenges and mark-compacts, and the young generation's largest capacity;
 * - after the window, the heap before and after two full GCs (live heap), external
 *   and array-buffer memory (bench/gc-probe.cjs), and a heap snapshot whose kinds
 *   are compared with the case of fewest tasks (bench/heap-summary.mjs).
 *
 * Bytes per task: (a figure at N tasks − the same at the fewest) ÷ N.
 * With BENCH_MEMORY_BEFORE=<a directory holding an earlier commit's build
 * (dist/src/main.js, node_modules)>, every case runs on that build too, right
 * before this one's: the anchor of the same run.
 *
 * Knobs: BENCH_MEMORY_TASKS (default "0,10000,30000"), BENCH_MEMORY_WINDOW_S (20,
 * a multiple of 5), BENCH_MEMORY_SNAPSHOTS ("1": heap snapshots and their diff; "0": none),
 * BENCH_MEMORY_WRITE ("1": this part's section of bench/RESULTS.md), BENCH_MEMORY_BEFORE.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { createTasks, lateness, seedFollowProject, startFollowSimulator } from "./follow-setup.mjs";
import { heapBytes, heapGrowth, summarizeHeap } from "./heap-summary.mjs";
import { procKb, Servers, splitCpus, stallProbe } from "./processes.mjs";
import { memoryReport } from "./follow-memory-report.mjs";

const env = process.env;
const TASKS = (env.BENCH_MEMORY_TASKS ?? "0,10000,30000").split(",").map(Number);
const WINDOW_S = Number(env.BENCH_MEMORY_WINDOW_S ?? 20);
const SNAPSHOTS = (env.BENCH_MEMORY_SNAPSHOTS ?? "1") === "1";
const BEFORE = env.BENCH_MEMORY_BEFORE;
if (!TASKS.every((n) => Number.isInteger(n) && n >= 0)) throw new Error("BENCH_MEMORY_TASKS: whole numbers ≥ 0");
if (!(WINDOW_S > 0 && WINDOW_S % 5 === 0)) throw new Error("BENCH_MEMORY_WINDOW_S: a multiple of 5");
if (BEFORE && !existsSync(join(BEFORE, "dist/src/main.js")))
  throw new Error(`BENCH_MEMORY_BEFORE: no build in ${BEFORE}`);
const BUILDS = [...(BEFORE ? [{ name: "before", root: BEFORE }] : [])];
BUILDS.push({ name: BEFORE ? "after" : "this", root: "." });

const WORK = mkdtempSync(join(tmpdir(), "bl-follow-memory-"));
const { serverCpu, loadCpu } = splitCpus();
const servers = new Servers({ work: WORK, cpu: serverCpu });
const log = (...args) => console.error(`[bench:follow-memory ${new Date().toISOString().slice(11, 19)}]`, ...args);
const mb = (kb) => kb / 1024;

/** Resets the process's peak RSS (VmHWM) to its RSS now; false when /proc does not let us. */
function resetPeak(pid) {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

/** The GCs V8 reported (`--trace-gc-nvp`) in `text`: bytes allocated and promoted, scavenges, mark-compacts. */
function gcTotals(text) {
  const t = { allocated: 0, promoted: 0, scavenges: 0, markCompacts: 0, newSpaceMax: 0 };
  for (const line of text.split("\n")) {
    const kind = / gc=(\w+) /.exec(line)?.[1];
    if (kind === undefined) continue;
    if (kind === "s") t.scavenges++;
    else if (kind === "mc" || kind === "ms") t.markCompacts++;
    t.allocated += Number(/ allocated=(\d+)/.exec(line)?.[1] ?? 0);
    t.promoted += Number(/ promoted=(\d+)/.exec(line)?.[1] ?? 0);
    t.newSpaceMax = Math.max(t.newSpaceMax, Number(/ new_space_capacity=(\d+)/.exec(line)?.[1] ?? 0));
  }
  return t;
}

/** process.memoryUsage() after two full GCs, and as it was before them (bench/gc-probe.cjs); the snapshot too when asked. */
async function probe(bl) {
  rmSync(bl.probeFile, { force: true });
  process.kill(bl.pid, "SIGUSR2");
  for (let i = 0; i < 1200 && !existsSync(bl.probeFile); i++) await sleep(50);
  if (!existsSync(bl.probeFile)) throw new Error("the GC probe did not answer within 60 s");
  return JSON.parse(readFileSync(bl.probeFile, "utf8"));
}

async function runCase(build, tasks) {
  const name = `${build.name}-${tasks}`;
  const redis = await servers.startRedis(`redis-${name}`);
  const project = await seedFollowProject(redis.url);
  const sim = await startFollowSimulator(project.sdkToken);
  const probeFile = join(WORK, `${name}.memory.json`);
  const snapshot = SNAPSHOTS ? join(WORK, `${name}.heapsnapshot`) : undefined;
  const bl = {
    probeFile,
    ...(await servers.startBoardline(
      `boardline-${name}`,
      {
        REDIS_URL: redis.url,
        JWT_SECRET: project.jwtSecret,
        CONVERSION_API_BASE: sim.url,
        SHUTDOWN_DELAY_MS: "0",
        BENCH_GC_PROBE_OUT: probeFile,
        ...(snapshot ? { BENCH_GC_PROBE_SNAPSHOT: snapshot } : {}),
      },
      ["--expose-gc", "--trace-gc-nvp", "-r", "./bench/gc-probe.cjs"],
      build.root,
    )),
  };
  const idleRssKb = procKb(bl.pid, "VmRSS");
  const peakReset = resetPeak(bl.pid);
  const createdAt = Date.now();
  await createTasks([bl.url], project, tasks);
  const createS = (Date.now() - createdAt) / 1000;
  const createPeakKb = procKb(bl.pid, "VmHWM");
  log(`${name}: ${tasks} tasks created in ${createS.toFixed(1)} s (peak ${mb(createPeakKb).toFixed(0)} MB); settling`);
  await sleep(20_000); // the youngest 10 s old, then a full poll period: every task polled every 5 s
  resetPeak(bl.pid);
  const first = await lateness(bl.url);
  const logFrom = statSync(bl.logFile).size;
  const rssKb = [];
  const end = Date.now() + WINDOW_S * 1000;
  while (Date.now() < end) {
    await sleep(1000);
    rssKb.push(procKb(bl.pid, "VmRSS"));
  }
  const last = await lateness(bl.url);
  const gc = gcTotals(readFileSync(bl.logFile).subarray(logFrom).toString("latin1"));
  const followPeakKb = procKb(bl.pid, "VmHWM");
  const usage = await probe(bl);
  sim.child.kill();
  await servers.stopAll();
  const result = {
    build: build.name,
    tasks,
    createS,
    pollsPerS: (last.count - first.count) / WINDOW_S,
    windowS: WINDOW_S,
    idleRssKb,
    createPeakKb,
    followPeakKb,
    followRssMaxKb: Math.max(...rssKb),
    peakReset,
    usage,
    gc,
    snapshot,
  };
  log(
    `${name}: ${result.pollsPerS.toFixed(0)} polls/s; peak while following ${mb(followPeakKb).toFixed(0)} MB; ` +
      `live heap ${mb(usage.heapUsed / 1024).toFixed(1)} MB (${mb(usage.beforeGc.heapUsed / 1024).toFixed(1)} before the GCs), ` +
      `external ${mb(usage.external / 1024).toFixed(1)} MB`,
  );
  return result;
}

/** Per build: the heap snapshot of its largest case against its smallest's, by kind. */
function snapshotDiffs(results) {
  const diffs = [];
  for (const build of BUILDS) {
    const own = results.filter((r) => r.build === build.name && r.snapshot && existsSync(r.snapshot));
    if (own.length < 2) continue;
    const [low, high] = [own[0], own[own.length - 1]];
    const [a, b] = [summarizeHeap(low.snapshot), summarizeHeap(high.snapshot)];
    diffs.push({
      build: build.name,
      from: low.tasks,
      to: high.tasks,
      totalKb: [heapBytes(a) / 1024, heapBytes(b) / 1024],
      rows: heapGrowth(a, b, 12),
    });
  }
  return diffs;
}

const loadStart = loadavg();
const stall = stallProbe(serverCpu, loadCpu);
log(`stall probe: ${JSON.stringify(stall)}`);
const results = [];
try {
  for (const tasks of [...TASKS].sort((a, b) => a - b)) {
    for (const build of BUILDS) results.push(await runCase(build, tasks));
  }
} finally {
  await servers.stopAll();
}
const diffs = snapshotDiffs(results);
const md = memoryReport({
  results,
  diffs,
  builds: BUILDS.map((b) => b.name),
  stall,
  machine: `${cpus().length} CPUs, ${cpus()[0]?.model ?? "?"}`,
  load: [loadStart, loadavg()],
  windowS: WINDOW_S,
  node: process.version,
});
console.log(md);
writeFileSync(join(WORK, "results.json"), JSON.stringify({ results, diffs }, null, 2));
log(`figures and snapshots in ${WORK}`);
if ((env.BENCH_MEMORY_WRITE ?? "0") === "1") {
  const { writeResultsSection } = await import("./processes.mjs");
  writeResultsSection("<!-- follow-memory:start -->", "<!-- follow-memory:end -->", md, log);
}
