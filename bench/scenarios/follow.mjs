/**
 * How many conversions in flight boardline follows on time (`npm run bench:follow`; part of
 * `npm run bench`). Writes its section of docs/performance.md (bench/report/follow.mjs).
 *
 * Each case starts its own redis-server, the conversion simulator in a process
 * of its own (bench/lib/watch-simulator.mjs, with a progress step of an hour, so
 * every task stays in flight), and `instances` boardline processes (the real
 * `dist/src/main.js`, package.json's nodeFlags, NODE_ENV=production). It
 * creates `tasks` conversions through the JSON ConvertFile route, waits until
 * the youngest is 10 s old (from then on each task is due every
 * CONVERSION_POLL_MAX_MS = 5 s), and then reads, over a window:
 *
 * - the polls each instance made and how late they began after their due time
 *   (`boardline_conversion_poll_lateness_seconds` from each one's /metrics: the
 *   histogram's bucket counts at the start and the end of the window);
 * - the CPU of each instance and of redis-server (/proc/<pid>/stat), per poll.
 *
 * The anchor, in the same run: a bare client (keep-alive fetch, 64 at once)
 * querying the same simulator's tasks as fast as it answers — the most polls
 * per second any follower could make on this machine.
 *
 * Knobs: BENCH_FOLLOW_CASES ("instances×tasks", comma-separated; default
 * "1x2500,1x5000,1x10000,3x10000"), BENCH_FOLLOW_WINDOW_S (20; whole poll periods of 5 s),
 * BENCH_NO_WRITE (print the section only).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { createTasks, lateness, seedFollowProject, startFollowSimulator } from "../lib/follow-setup.mjs";
import { cpuTicks, procKb, Servers, TICK_US } from "../lib/processes.mjs";
import { writeSection } from "../report/document.mjs";
import { render } from "../report/follow.mjs";

const CASES = (process.env.BENCH_FOLLOW_CASES ?? "1x2500,1x5000,1x10000,3x10000").split(",").map((c) => {
  const [instances = 0, tasks = 0] = c.split("x").map(Number);
  if (!(instances >= 1 && tasks >= 1)) throw new Error(`BENCH_FOLLOW_CASES: "${c}" is not <instances>x<tasks>`);
  return { instances, tasks };
});
const POLL_MAX_MS = 5_000;
const WINDOW_S = Number(process.env.BENCH_FOLLOW_WINDOW_S ?? 20);
// Tasks created together come due together: a window of whole poll periods sees each one as often.
if (!(WINDOW_S > 0 && (WINDOW_S * 1000) % POLL_MAX_MS === 0)) throw new Error("BENCH_FOLLOW_WINDOW_S: a multiple of 5");
const WORK = mkdtempSync(join(tmpdir(), "bl-follow-"));
const servers = new Servers({ work: WORK });
const log = (...args) => console.error(`[bench:follow ${new Date().toISOString().slice(11, 19)}]`, ...args);

function rssMb(pid) {
  return procKb(pid, "VmRSS") / 1024;
}

/** The smallest bucket bound under which a share `q` of the window's polls began. */
function quantileBound(start, end, q) {
  const total = end.count - start.count;
  for (const [le, n] of [...end.buckets].sort(([a], [b]) => a - b)) {
    if (n - (start.buckets.get(le) ?? 0) >= q * total) return le;
  }
  return Number.NaN;
}

/** The anchor: queries of the simulator's tasks by a bare client, 64 at once, for `seconds`. */
async function bareQueries(simUrl, sdkToken, uuids, seconds) {
  let made = 0;
  const end = Date.now() + seconds * 1000;
  const worker = async (w) => {
    for (let i = w; Date.now() < end; i += 64) {
      const res = await fetch(`${simUrl}/v5/projector/tasks/${uuids[i % uuids.length]}`, {
        headers: { token: sdkToken, region: "us-sv", accept: "application/json" },
      });
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`simulator query: ${res.status}`);
      made++;
    }
  };
  await Promise.all(Array.from({ length: 64 }, (_, w) => worker(w)));
  return made / seconds;
}

async function runCase({ instances, tasks }) {
  const redis = await servers.startRedis();
  const project = await seedFollowProject(redis.url);
  const { sdkToken } = project;
  const sim = await startFollowSimulator(sdkToken);
  const bls = [];
  for (let i = 0; i < instances; i++) {
    const env = {
      REDIS_URL: redis.url,
      JWT_SECRET: project.jwtSecret,
      CONVERSION_API_BASE: sim.url,
      SHUTDOWN_DELAY_MS: "0",
    };
    bls.push(await servers.startBoardline(`boardline-${i}`, env));
  }
  const createdAt = Date.now();
  const uuids = await createTasks(
    bls.map((b) => b.url),
    project,
    tasks,
  );
  const createS = (Date.now() - createdAt) / 1000;
  log(`${instances}×${tasks}: created in ${createS.toFixed(1)} s; warming up`);
  await sleep(10_000 + 2 * POLL_MAX_MS); // the youngest 10 s old, then one full poll period
  /** @typedef {{ at: number, late: Awaited<ReturnType<typeof lateness>>[], cpu: number[], redisCpu: number, simCpu: number }} Reading */
  /** @type {Reading} */
  const start = { at: Date.now(), late: [], cpu: [], redisCpu: cpuTicks(redis.pid), simCpu: cpuTicks(sim.pid) };
  for (const bl of bls) {
    start.late.push(await lateness(bl.metricsUrl));
    start.cpu.push(cpuTicks(bl.pid));
  }
  await sleep(WINDOW_S * 1000);
  /** @type {Reading} */
  const end = { at: Date.now(), late: [], cpu: [], redisCpu: cpuTicks(redis.pid), simCpu: cpuTicks(sim.pid) };
  for (const bl of bls) {
    end.late.push(await lateness(bl.metricsUrl));
    end.cpu.push(cpuTicks(bl.pid));
  }
  const seconds = (end.at - start.at) / 1000;
  const polls = bls.map((_, i) => (end.late[i]?.count ?? 0) - (start.late[i]?.count ?? 0));
  const total = polls.reduce((a, b) => a + b, 0);
  const merged = (/** @type {Reading} */ side) => ({
    count: side.late.reduce((a, l) => a + l.count, 0),
    buckets: new Map(
      [...(side.late[0]?.buckets.keys() ?? [])].map((le) => [
        le,
        side.late.reduce((a, l) => a + (l.buckets.get(le) ?? 0), 0),
      ]),
    ),
  });
  const [s, e] = [merged(start), merged(end)];
  const onTime = ((e.buckets.get(1) ?? 0) - (s.buckets.get(1) ?? 0)) / total;
  const instanceCpuUs = bls.reduce((a, _, i) => a + ((end.cpu[i] ?? 0) - (start.cpu[i] ?? 0)), 0) * TICK_US;
  const anchor = await bareQueries(sim.url, sdkToken, uuids, 5);
  const result = {
    instances,
    tasks,
    createS,
    pollsPerS: total / seconds,
    neededPerS: tasks / (POLL_MAX_MS / 1000),
    share: polls.map((p) => p / total),
    onTimeShare: onTime,
    p50LateS: quantileBound(s, e, 0.5),
    p99LateS: quantileBound(s, e, 0.99),
    instanceCpuUsPerPoll: instanceCpuUs / total,
    redisCpuUsPerPoll: ((end.redisCpu - start.redisCpu) * TICK_US) / total,
    simulatorCpuUsPerPoll: ((end.simCpu - start.simCpu) * TICK_US) / total,
    instanceRssMb: bls.map((b) => Math.round(rssMb(b.pid))),
    bareQueriesPerS: anchor,
  };
  sim.child.kill();
  await servers.stopAll();
  return result;
}

const startedAt = new Date();
const results = [];
try {
  for (const c of CASES) {
    const r = await runCase(c);
    results.push(r);
    const pct = (x) => `${(100 * x).toFixed(1)} %`;
    console.log(
      `${r.instances} instance(s), ${r.tasks} tasks: ${r.pollsPerS.toFixed(0)} polls/s of ${r.neededPerS.toFixed(0)} needed; ` +
        `on time (≤ 1 s late) ${pct(r.onTimeShare)}, p50 ≤ ${r.p50LateS} s, p99 ≤ ${r.p99LateS} s; ` +
        `share ${r.share.map(pct).join(" / ")}; CPU per poll: instances ${r.instanceCpuUsPerPoll.toFixed(0)} µs, ` +
        `redis ${r.redisCpuUsPerPoll.toFixed(0)} µs, simulator ${r.simulatorCpuUsPerPoll.toFixed(0)} µs; ` +
        `RSS ${r.instanceRssMb.join(" / ")} MB; anchor: a bare client gets ${r.bareQueriesPerS.toFixed(0)} queries/s; ` +
        `ConvertFile ×${r.tasks} took ${r.createS.toFixed(1)} s`,
    );
  }
} finally {
  await servers.stopAll();
}
writeSection("follow", render({ cases: results, startedAt, windowS: WINDOW_S }));
