/**
 * Renders bench/scenarios/watch-fanout.mjs's result (its watch-fanout.json) as the
 * watch fan-out section of docs/performance.md: the
 * verdict table — each target, boardline's figure, the same
 * figure of the bare fan-out floor measured in the same run, PASS/FAIL, and
 * whether the floor itself meets the target (if not, this machine cannot) —
 * then the details.
 *
 *   node bench/report/watch-fanout.mjs <watch-fanout.json>   (prints it again)
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { median } from "../lib/watch-clients.mjs";
import { measuredLine } from "./document.mjs";

const f = (x, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : "—");
/** kB as MB ("—" for a reading that did not come: NaN, or null once written as JSON). */
const mb = (kb) => (typeof kb === "number" ? f(kb / 1024) : "—");
const n0 = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString("en-US").replace(/,/g, " ") : "—");
const pct = (x) => (Number.isFinite(x) ? `${Math.round(x * 100)} %` : "—");
const table = (header, rows) =>
  [
    `| ${header.join(" | ")} |`,
    `| ${header.map(() => "---").join(" | ")} |`,
    ...rows.map((r) => `| ${r.join(" | ")} |`),
  ].join("\n");
const stall = (s) =>
  `${f(s.stalled_pct, 2)} % of ${s.seconds} s lost, ${s.gaps_over_2ms} gaps over 2 ms, the longest ${f(s.max_gap_ms)} ms`;

/** The figures the verdict judges, of one target (undefined when it did not run). */
function figures(t, watches) {
  if (t === undefined) return undefined;
  const idle = t.memory[0];
  const open = t.memory[1];
  const delay = (protocol) => t.delays.find((d) => d.protocol === protocol);
  // Mutes/s with the watches against without; and the same judged by the server's CPU time per mute,
  // which a machine that lends the server's CPU to others moves far less than mutes/s.
  const ratio = (bodies) => {
    const cells = (w) => t.cells.filter((c) => c.bodies === bodies && c.watches === w && c.round > 0);
    const rps = (w) => median(cells(w).map((c) => c.rps));
    const cpu = (w) => median(cells(w).map((c) => c.serverCpuUsPerMute));
    return { ratio: rps(watches) / rps(0), without: rps(0), with: rps(watches), byCpu: cpu(0) / cpu(watches) };
  };
  return {
    rssMb: open.rssKb / 1024,
    rssKbPerWatch: (open.rssKb - idle.rssKb) / watches,
    heapKbPerWatch: (open.heapKb - idle.heapKb) / watches,
    grpc: delay("grpc"),
    sse: delay("sse"),
    unwatched: ratio("unwatched"),
    watched: ratio("watched"),
  };
}

/**
 * One verdict row: [target, measure(figures) → number, limit, unit, at least (else at most), aside(figures) →
 * what the measured cell adds in brackets].
 * @typedef {[string, (x: Figures) => number | undefined, number, string, boolean?, ((x: Figures) => string)?]} TargetRow
 * @typedef {NonNullable<ReturnType<typeof figures>>} Figures
 */

/** @returns {TargetRow[]} */
function targetRows(s) {
  const w = n0(s.watches);
  /** @returns {TargetRow[]} */
  const delayRows = (/** @type {"grpc" | "sse"} */ protocol, /** @type {string} */ label) => [
    [`${label}: answer → event p50 ≤ 10 ms`, (x) => x[protocol]?.p50, 10, "ms"],
    [`${label}: answer → event p99 ≤ 40 ms`, (x) => x[protocol]?.p99, 40, "ms"],
  ];
  return [
    [`RSS with ${w} watches ≤ 300 MB`, (x) => x.rssMb, 300, "MB"],
    [`RSS per watch beyond idle ≤ 10 KB`, (x) => x.rssKbPerWatch, 10, "KB"],
    ...delayRows("grpc", "gRPC"),
    ...delayRows("sse", "SSE"),
    [
      `mutes c16, unwatched channels, with ${w} watches ≥ 0.8× without`,
      (x) => x.unwatched.ratio,
      0.8,
      "×",
      true,
      (x) => `by CPU per mute ${f(x.unwatched.byCpu, 2)} ×`,
    ],
    [
      `mutes c16 round the watched channels (${s.perChannel} deliveries each) ≥ 0.8× without`,
      (x) => x.watched.ratio,
      0.8,
      "×",
      true,
      (x) => `by CPU per mute ${f(x.watched.byCpu, 2)} ×`,
    ],
  ];
}

function verdict(r) {
  const s = r.settings;
  const bl = figures(
    r.targets.find((t) => t.name === "boardline"),
    s.watches,
  );
  const fl = figures(
    r.targets.find((t) => t.name === "floor"),
    s.watches,
  );
  const rows = targetRows(s).map(([label, measure, limit, unit, atLeast, aside]) => {
    const meets = (/** @type {number} */ x) => (atLeast ? x >= limit : x <= limit);
    const digits = unit === "×" ? 2 : 1;
    /** @returns {[number, string]} */
    const cell = (/** @type {Figures | undefined} */ x) => {
      if (x === undefined) return [Number.NaN, "—"];
      const v = measure(x) ?? Number.NaN;
      return [v, `${f(v, digits)} ${unit}${aside ? ` (${aside(x)})` : ""}`];
    };
    const [b, bText] = cell(bl);
    const [a, aText] = cell(fl);
    const pass = meets(b) ? "PASS" : "FAIL";
    const note = Number.isFinite(a) && !meets(a) ? " (the floor fails it too: out of reach on this machine)" : "";
    return [label, bText, aText, `**${pass}**${pass === "FAIL" ? note : ""}`];
  });
  return { bl, fl, md: table(["target", "boardline", "floor (anchor)", "verdict"], rows) };
}

function details(r) {
  const memoryRows = r.targets.flatMap((t) =>
    t.memory.map((m) => [t.name, m.label, mb(m.rssKb), mb(m.heapKb), mb(m.externalKb), m.fds]),
  );
  const cellRows = r.targets.flatMap((t) =>
    t.cells
      .filter((c) => c.round > 0)
      .map((c) => [
        t.name,
        c.round,
        c.bodies,
        n0(c.watches),
        n0(c.rps),
        `${f(c.p50Ms, 2)} / ${f(c.p99Ms, 2)}`,
        n0(c.serverCpuUsPerMute),
        c.watches === 0 ? "—" : `${n0(c.deliveries)} (${c.missing} missing, ${n0(c.drainMs)} ms to catch up)`,
        `${pct(c.serverMs / 1000 / c.seconds)} (${pct(c.serverCpuBusy)})`,
        pct(c.loadCpuBusy),
        pct(c.watchersMs / 1000 / c.seconds),
        c.failed,
      ]),
  );
  const delayRows = r.targets.flatMap((t) =>
    t.delays.map((d) => [
      t.name,
      d.protocol,
      n0(d.watchers),
      `${d.probes} (${d.missed} missed)`,
      `**${f(d.p50, 2)} / ${f(d.p99, 2)}**`,
      f(d.firstP50, 2),
      `${f(d.lastP50, 2)} / ${f(d.lastP99, 2)}`,
      f(d.sentToAckP50, 2),
      f(d.serverCpuMsPerProbe, 2),
      f(d.watchersCpuMsPerProbe, 2),
    ]),
  );
  const attachRows = r.targets.flatMap((t) =>
    t.attaches.map((a) => [
      t.name,
      a.round,
      n0(a.ms),
      n0(a.serverCpuMs),
      a.lagMs === Number.POSITIVE_INFINITY ? "over 10 000 (/metrics did not answer)" : f(a.lagMs, 0),
    ]),
  );
  const checks = r.targets.map(({ name, problems: p = { errors: [], outOfOrder: 0, reconnects: {} } }) => {
    const reasons = Object.entries(p.reconnects).map(([why, n]) => `${n} × "${why}"`);
    return `- ${name}: errors ${p.errors.length === 0 ? "none" : `${p.errors.length} (${p.errors.slice(0, 5).join("; ")})`}; events out of order ${p.outOfOrder}; watches ended with UNAVAILABLE (or a transport error, which a gRPC client sees as UNAVAILABLE) and opened again from their last event id: ${reasons.length === 0 ? "none" : reasons.join("; ")}.`;
  });
  return [
    "### Memory",
    "",
    "RSS: the median of 5 readings 200 ms apart; live heap and external: right after two full GCs (bench/lib/gc-probe.cjs); fds: open file descriptors.",
    "",
    table(["target", "when", "RSS MB", "live heap MB", "external MB", "fds"], memoryRows),
    "",
    "### Mutes at c16 (wrk, JSON over HTTP/1.1)",
    "",
    `Each cell ${r.knobs.seconds} s after a ${r.knobs.warmup} s warm-up. "unwatched": mutes going round ${r.settings.unwatched} channels nobody watches; "watched": going round the ${n0(r.settings.channels)} watched channels, each mute an event for ${r.settings.perChannel} watches, every delivery checked against the events the channels gained. Server µs/mute: the target process's own CPU time per mute (the fan-out included); server process CPU: its share of one CPU, and in brackets how busy its CPU was (/proc/stat: whatever ran on it, other work on the machine too); load CPU busy likewise; watchers: the watcher processes' share of one CPU.`,
    "",
    table(
      [
        "target",
        "round",
        "mutes to",
        "watches",
        "mutes/s",
        "p50 / p99 ms",
        "server µs/mute",
        "deliveries",
        "server process CPU (its CPU busy)",
        "load CPU busy",
        "watchers CPU",
        "failed",
      ],
      cellRows,
    ),
    "",
    "### Answer → event, watchers of one channel",
    "",
    `Probe mutes one at a time (10–20 ms apart), from the time this process had read each mute's answer to the time a watcher process read its event (the monotonic clock, the same in every process); p50 / p99 over every (probe × watcher) delivery; "first" and "last": per probe, the first and the last watcher; CPU per probe: the server's and the watcher processes' own time. The watcher processes share one CPU, so their CPU per probe is spent one event after another: it bounds the last watcher's delay from below and adds about half of itself to the p50, for the floor as for boardline.`,
    "",
    table(
      [
        "target",
        "protocol",
        "watchers",
        "probes",
        "answer → event p50 / p99 ms",
        "first p50",
        "last p50 / p99",
        "send → answer p50",
        "server CPU ms/probe",
        "watchers CPU ms/probe",
      ],
      delayRows,
    ),
    "",
    "### Attaching the watches",
    "",
    "From the first watch opened until every watch had its channel's attach mute; boardline's longest event-loop delay meanwhile (`nodejs_eventloop_lag_max_seconds`).",
    "",
    table(["target", "round", "ms", "server CPU ms", "loop delay ms"], attachRows),
    "",
    "### Checks",
    "",
    ...checks,
  ].join("\n");
}

/** What a scrape of boardline's /metrics holds, idle and with every watch open (no label grows with watches). */
function seriesLine(r) {
  const s = r.targets.find((t) => t.name === "boardline")?.series;
  if (s === undefined) return "Series on boardline's /metrics: not measured.";
  return `Series on boardline's /metrics (sample lines): ${n0(s.idle)} idle, ${n0(s.open)} with ${n0(r.settings.watches)} watches open.`;
}

export function render(r) {
  const { bl, fl, md } = verdict(r);
  const pin = r.pinning
    ? `redis-server, boardline and the floor on CPU ${r.pinning.server}; this process, ${r.settings.clients} watcher process(es) and wrk on CPU ${r.pinning.load}`
    : "no pinning (one CPU)";
  const perWatch = (x) => (x === undefined ? "—" : `${f(x.rssKbPerWatch)} KB RSS, ${f(x.heapKbPerWatch)} KB live heap`);
  return [
    measuredLine("watch-fanout", new Date(r.startedAt)),
    "",
    `${n0(r.elapsedS)} s in all; load average ${r.loadavg.start.map((l) => l.toFixed(2)).join(" ")} at the start, ${r.loadavg.end.map((l) => l.toFixed(2)).join(" ")} at the end; ${pin}; \`ulimit -n\` ${r.openFiles}.`,
    `Stall probe (bench/lib/stall.mjs on the servers' CPU while the other spins): before ${stall(r.stall.before)}; after ${stall(r.stall.after)}.`,
    `${n0(r.settings.watches)} watches: half gRPC (HTTP/2 connections of 200 streams), half SSE (an HTTP/1.1 connection each), ${r.settings.perChannel} per channel over ${n0(r.settings.channels)} channels; ${n0(r.knobs.delayWatchers)} watchers of one channel per protocol for the delays, ${r.knobs.probes} probes each; mute cells in ${r.knobs.rounds} round(s). The anchor is the bare fan-out floor (bench/baselines/fanout-floor.mjs: node:http2 + node:http, no Redis, no JWT), measured by the same clients in the same run; the mute-rate targets' anchor is boardline's own cell without watches (the floor's ratio is shown to tell whether any Node server reaches it here).`,
    "",
    md,
    "",
    `Per watch beyond idle: boardline ${perWatch(bl)}; the floor ${perWatch(fl)}. Mutes/s without → with the watches: boardline unwatched ${n0(bl?.unwatched.without)} → ${n0(bl?.unwatched.with)}, watched ${n0(bl?.watched.without)} → ${n0(bl?.watched.with)}; the floor unwatched ${n0(fl?.unwatched.without)} → ${n0(fl?.unwatched.with)}, watched ${n0(fl?.watched.without)} → ${n0(fl?.watched.with)}.`,
    "",
    seriesLine(r),
    "",
    details(r),
  ].join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv[2]) {
  console.log(render(JSON.parse(readFileSync(process.argv[2], "utf8"))));
}
