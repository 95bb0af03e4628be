/**
 * Renders bench/run.sh's request cells (one JSON line per cell, from bench/lib/collect.mjs) as the mute
 * section of docs/performance.md (the targets against the anchors, and every cell), and the
 * conversions section (bench/report/conversions.mjs), each when its mode ran.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { conversionsSection as renderConversions } from "./conversions.mjs";
import { measuredLine, writeSection } from "./document.mjs";
import { redisTlsSection } from "./redis-tls.mjs";

const env = process.env;
/** @param {string} name an environment variable bench/run.sh sets */
const required = (name) => {
  const value = env[name];
  if (!value) throw new Error(`${name} is not set: bench/run.sh runs this`);
  return value;
};
const cells = readFileSync(required("BENCH_RESULTS"), "utf8")
  .split("\n")
  .filter((l) => l.trim() !== "")
  .map((l) => JSON.parse(l));
const verify = readFileSync(required("BENCH_VERIFY"), "utf8").trim();
const watchers =
  env.BENCH_WATCHERS_JSON && existsSync(env.BENCH_WATCHERS_JSON)
    ? JSON.parse(readFileSync(env.BENCH_WATCHERS_JSON, "utf8"))
    : undefined;
const conversionsSection = () => renderConversions(cells, watchers, cpuPerResponse);
const stalls =
  env.BENCH_STALLS && existsSync(env.BENCH_STALLS)
    ? readFileSync(env.BENCH_STALLS, "utf8")
        .split("\n")
        .filter((l) => l.trim() !== "")
        .map((l) => JSON.parse(l))
    : [];
const describeStalls = (s) =>
  `${s.when}: ${s.stalled_pct.toFixed(1)} % of ${s.seconds} s stalled, ${s.gaps_over_2ms} gaps > 2 ms (${s.gaps_over_5ms} > 5 ms), longest ${s.max_gap_ms.toFixed(1)} ms`;

/** What the servers logged during the run (boardline at warn and above), grouped. */
function logSummary() {
  const lines = [];
  for (const name of [
    "boardline",
    "boardline-nocache",
    "boardline-tls",
    "baseline-http",
    "baseline-grpc",
    "floor",
    "floor-plus-write",
    "simulator",
    "boardline-watch-short",
    "boardline-watch-default",
    "watch-simulator",
  ]) {
    const path = `${env.BENCH_WORK}/${name}.log`;
    if (!existsSync(path)) continue;
    const counts = new Map();
    for (const line of readFileSync(path, "utf8").split("\n")) {
      if (line.trim() === "" || / listening on /.test(line)) continue;
      let key = line.slice(0, 160);
      try {
        const r = JSON.parse(line);
        const level = { 40: "warn", 50: "error", 60: "fatal" }[r.level] ?? r.level;
        key = [level, r.msg, r.rpc, r.protocol, r.err?.message].filter((x) => x !== undefined).join(" · ");
      } catch {}
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    for (const [key, n] of counts) lines.push(`- ${name}: ${n} × \`${key}\``);
  }
  return lines.length === 0 ? "Nothing: no server logged a line during the run." : lines.join("\n");
}

const cellsOf = (target, route, proto, c) =>
  cells.filter((r) => r.target === target && r.route === route && r.proto === proto && r.c === c);
/** The first run of a cell (the p99 target's cells run more than once). */
const find = (target, route, proto, c) => cellsOf(target, route, proto, c).find((r) => (r.run ?? 1) === 1);
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const concurrencies = [...new Set(cells.map((r) => r.c))].sort((a, b) => a - b);
const f = (n, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");
const mb = (kb) => f(kb / 1024, 0);
const verdict = (ok) => (ok ? "PASS" : "**FAIL**");

function run(cmd, args) {
  try {
    return execFileSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
  } catch {
    return "unknown";
  }
}

// --- tools and code ---
const head = run("git", ["rev-parse", "--short", "HEAD"]);
const dirty = run("git", ["status", "--porcelain", "--untracked-files=all", "--", "src", "gen"]);
const redisVersion = /v=(\S+)/.exec(run("redis-server", ["--version"]))?.[1] ?? "unknown";
const wrkVersion = /wrk (\S+)/.exec(run("sh", ["-c", "wrk -v 2>&1 || true"]))?.[1] ?? "unknown";
const h2loadVersion = run("h2load", ["--version"]).replace(/^h2load\s*/, "");

// --- targets ---
// Judged against the floors of the same run (c16, the medians of the repeated cells), and against the
// bare servers doing the same work.
const targets = [];
const row = (check, measured, target, ok) => targets.push([check, measured, target, verdict(ok)]);
// boardline ≥ 1.5× the bare servers at c16; at c1 and c64, and without the read cache, the lower minimum.
const againstBare = (who, c, lowerMin) => (who === "boardline" && c === 16 ? "1.5" : lowerMin);
for (const [proto, what, bare, bareName, lowerMin] of [
  ["JSON", "JSON mute", "baseline-http", "baseline-http", "0.85"],
  ["gRPC", "gRPC Mute", "baseline-grpc", "grpc-js", "1.0"],
])
  for (const [who, label] of [
    ["boardline", ""],
    ["boardline-nocache", " (no read cache)"],
  ])
    for (const c of concurrencies) {
      const min = againstBare(who, c, lowerMin);
      const a = find(who, "mute", proto, c);
      const b = find(bare, "mute", proto, c);
      if (a && b) {
        const ratio = a.rps / b.rps;
        row(
          `${what}${label} ÷ ${bareName}, req/s, c${c}`,
          `${f(ratio)}× (${f(a.rps, 0)} / ${f(b.rps, 0)})`,
          `≥ ${min}×`,
          ratio >= Number(min),
        );
      }
    }
/** The median of one field over every run of a cell, and the runs' values. */
const medianOf = (target, proto, field) => {
  const values = cellsOf(target, "mute", proto, 16).map((r) => r[field]);
  return { value: values.length > 0 ? median(values) : Number.NaN, values };
};
const runsText = (values, digits) =>
  values.length > 1 ? `median of ${values.map((x) => f(x, digits)).join(", ")}` : "one run";
for (const [proto, floorName, minRps] of /** @type {[string, string, number][]} */ ([
  ["JSON", "HTTP/1.1 floor", 0.5],
  ["gRPC", "h2 floor", 0.7],
])) {
  const what = proto === "JSON" ? "JSON mute" : "gRPC Mute";
  const rps = medianOf("boardline", proto, "rps");
  const floorRps = medianOf("floor", proto, "rps");
  const p99 = medianOf("boardline", proto, "p99_ms");
  const floorP99 = medianOf("floor", proto, "p99_ms");
  if (rps.values.length === 0 || floorRps.values.length === 0) continue;
  const rpsRatio = rps.value / floorRps.value;
  row(
    `${what} ÷ ${floorName}, req/s, c16`,
    `${f(rpsRatio)}× (${f(rps.value, 0)} / ${f(floorRps.value, 0)}; boardline ${runsText(rps.values, 0)}; floor ${runsText(floorRps.values, 0)})`,
    `≥ ${minRps}×`,
    rpsRatio >= minRps,
  );
  const p99Ratio = p99.value / floorP99.value;
  row(
    `${what} p99 ÷ ${floorName} p99, c16`,
    `${f(p99Ratio)}× (${f(p99.value)} / ${f(floorP99.value)} ms; boardline ${runsText(p99.values, 2)}; floor ${runsText(floorP99.values, 2)})`,
    "≤ 1.5×",
    p99Ratio <= 1.5,
  );
  // The ceiling: the floor plus the mute's one Redis write, and nothing else (no verdict: a reference).
  const ceiling = medianOf("floor-plus-write", proto, "rps");
  const ceilingP99 = medianOf("floor-plus-write", proto, "p99_ms");
  // boardline against that ceiling (req/s ≥ 0.9×, p99 ≤ 1.3×), medians of the same runs.
  if (ceiling.values.length > 0) {
    const toCeiling = rps.value / ceiling.value;
    row(
      `${what} ÷ the floor plus one Redis write, req/s, c16`,
      `${f(toCeiling)}× (${f(rps.value, 0)} / ${f(ceiling.value, 0)}; floor plus write ${runsText(ceiling.values, 0)})`,
      "≥ 0.9×",
      toCeiling >= 0.9,
    );
    const p99ToCeiling = p99.value / ceilingP99.value;
    row(
      `${what} p99 ÷ the floor plus one Redis write's p99, c16`,
      `${f(p99ToCeiling)}× (${f(p99.value)} / ${f(ceilingP99.value)} ms; floor plus write ${runsText(ceilingP99.values, 2)})`,
      "≤ 1.3×",
      p99ToCeiling <= 1.3,
    );
  }
  if (ceiling.values.length > 0)
    targets.push([
      `the floor plus one Redis write, ${proto} ÷ ${floorName}, c16: the most a server making the mute's write can reach`,
      `${f(ceiling.value / floorRps.value)}× req/s (${f(ceiling.value, 0)}; ${runsText(ceiling.values, 0)}); p99 ${f(ceilingP99.value / floorP99.value)}× (${f(ceilingP99.value)} ms; ${runsText(ceilingP99.values, 2)})`,
      `req/s ≥ ${minRps}×, p99 ≤ 1.5×`,
      "reference",
    ]);
}
const peakKb = (target) => Math.max(...cells.filter((r) => r.target === target).map((r) => r.rss_peak_kb));
const peakMb = (target) => (Number.isFinite(peakKb(target)) ? `${mb(peakKb(target))} MB` : "not run");
const blPeak = Math.max(peakKb("boardline"), peakKb("boardline-nocache"));
row("boardline peak RSS under load (max over its cells)", `${mb(blPeak)} MB`, "≤ 150 MB", blPeak <= 150 * 1024);

// --- all cells ---
const ROUTE_NAMES = { mute: "Mute", get: "GetConversion", convert: "ConvertFile" };
/** A process's CPU time (user + system; the server's or Redis's) during the measured run, per response counted. */
const cpuPerResponse = (r, key = "cpu_ticks") =>
  r[key] === undefined ? Number.NaN : ((r[key] / r.clk_tck) * 1e6) / r.requests;
const order = [
  "boardline",
  "boardline-tls",
  "boardline-nocache",
  "baseline-http",
  "baseline-grpc",
  "floor-plus-write",
  "floor",
];
/** How the cell tables name each server. */
const SHOWN = { "floor-plus-write": "floor plus one Redis write" };
const sorted = cells
  .filter((r) => (r.run ?? 1) === 1)
  .sort(
    (x, y) =>
      x.route.localeCompare(y.route) * -1 ||
      x.proto.localeCompare(y.proto) ||
      order.indexOf(x.target) - order.indexOf(y.target) ||
      x.c - y.c,
  );
const rows = sorted.map((r) => [
  SHOWN[r.target] ?? r.target,
  ROUTE_NAMES[r.route] ?? r.route,
  `${r.proto} (${r.tool})`,
  r.c,
  f(r.rps, 0),
  f(r.p50_ms),
  f(r.p99_ms),
  f(r.max_ms),
  r.requests,
  r.tool === "h2load" ? `${r.succeeded}` : "—",
  r.non2xx,
  r.errors,
  r.target === "floor" ? "— (no work)" : `${f(r.redis_writes / r.requests)} (${r.redis_cmd})`,
  r.conv_due ?? "—",
  `${f(cpuPerResponse(r), 0)} / ${f(cpuPerResponse(r, "redis_cpu_ticks"), 0)}`,
  mb(r.rss_peak_kb),
]);

const table = (header, body) =>
  [
    `| ${header.join(" | ")} |`,
    `|${header.map(() => "---").join("|")}|`,
    ...body.map((r) => `| ${r.join(" | ")} |`),
  ].join("\n");

/** When the request cells began (the parts before them have dates of their own). */
const startedAt = env.BENCH_CELLS_STARTED_AT ? new Date(Number(env.BENCH_CELLS_STARTED_AT) * 1000) : new Date();
const only = env.BENCH_ONLY ?? "";

const muteSection = `${measuredLine("mute", startedAt)}

- Cells: ${env.BENCH_SECONDS} s each after a ${env.BENCH_WARMUP} s warm-up run; code built from ${head}${dirty === "" ? "" : " **with uncommitted changes in src/ or gen/**"}; redis-server ${redisVersion}; wrk ${wrkVersion}; h2load ${h2loadVersion}; every server runs with \`${env.BENCH_NODE_FLAGS ?? ""}\`.
- CPU pinning: ${env.BENCH_PINNING}. Load average (1/5/15 min) at start → end: ${env.BENCH_LOADAVG}.
- Peak RSS: ${env.BENCH_RSS_METHOD}.
- Stall probe on the servers' CPU, the other CPU busy: ${stalls.length === 0 ? "not measured" : stalls.map(describeStalls).join("; ")}.

### Targets

${table(["check", "measured", "target", "verdict"], targets)}

### Every request cell

A cell is one server answering one operation over one protocol at one concurrency (c: concurrent requests, wrk
connections or h2load connections of one stream each) for ${env.BENCH_SECONDS} s. Latency in ms.
"Redis commands ÷ responses" is the growth of the Redis command counter (\`xadd\` for Mute, \`expire\` for
ConvertFile, as run by the mute script / conversion record; \`hgetall\` for GetConversion, the record read)
divided by the responses counted; ≈ 1.00 means every counted response was a real write (a little above 1:
requests still in flight when the load stopped). GetConversion's \`hgetall\` also counts the followers' polls,
which read each followed task's record. "Tasks being followed": the due index's size (\`conv-due\`) when the
cell started — tasks the boardline instances' followers poll meanwhile; the ConvertFile cells, which make
thousands, run last (and after the second stall probe) for that reason.
"CPU µs / response": the server process's and redis-server's user + system CPU time over the measured run
(\`/proc/<pid>/stat\`, 10 ms ticks) divided by the responses — a cost per call that waiting for a busy machine
does not inflate (it includes the followers' work, if any; Redis's counts every server's commands).

${table(
  [
    "server",
    "operation",
    "protocol (tool)",
    "c",
    "req/s",
    "p50",
    "p99",
    "max",
    "responses",
    "h2load succeeded",
    "non-2xx",
    "socket errors",
    "Redis commands ÷ responses",
    "tasks being followed",
    "CPU µs / response: server / Redis",
    "peak RSS MB",
  ],
  rows,
)}

How: wrk -t 1 -c C (HTTP/1.1 keep-alive, bench/wrk/post.lua); p50/p99 from wrk's latency histogram. h2load -t 1 -c C -m 1
(h2c prior knowledge, the gRPC frame from \`-d\`); h2load prints no percentiles, so p50/p99 are nearest-rank over its
\`--log-file\` (per-request µs from start to end of response). Every cell is a separate warm-up run, then the measured run,
against a server that keeps running across cells; cells of peers are interleaved. Non-2xx: wrk's status errors (≥ 400) /
non-200 lines in h2load's log; a gRPC error would still be HTTP 200, which is what the Redis-writes column is for.
boardline's, the floor's and the floor plus one Redis write's c16 mute cells run ${env.BENCH_P99_RUNS ?? 1} times in a row, each boardline cell next to its floor cell
(BENCH_P99_RUNS): the table shows the first run, the targets against the floors are judged on the medians of all of them.

Peak RSS of the other processes: boardline-tls ${peakMb("boardline-tls")}, baseline-http ${peakMb("baseline-http")}, baseline-grpc ${peakMb("baseline-grpc")}, the floor ${peakMb("floor")}, the floor plus one Redis write ${peakMb("floor-plus-write")}.

${redisTlsSection(cells, cpuPerResponse)}

### Server logs during the run

${logSummary()}

### Checked before measuring

${verify}`;

if (only === "" || only === "mute") writeSection("mute", muteSection);
if (only === "" || only === "conversions")
  writeSection(
    "conversions",
    `${measuredLine("conversions", startedAt)}

Beside boardline's own mute cells of the same run (${env.BENCH_SECONDS} s cells after a ${env.BENCH_WARMUP} s warm-up; ${env.BENCH_PINNING}).

${conversionsSection()}`,
  );
