/**
 * Renders bench/scenarios/pstn-watchers.mjs's result (the JSON it writes to
 * $BENCH_WORK/pstn-watchers.json) as its section of docs/performance.md.
 *
 *   node bench/report/pstn-watchers.mjs <pstn-watchers.json>   (prints it again)
 */
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { measuredLine } from "./document.mjs";

const f = (x, digits = 2) => (Number.isFinite(x) ? x.toFixed(digits) : "—");
const n0 = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString("en-US").replace(/,/g, " ") : "—");
const quantile = (xs, q) => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
};
const median = (xs) => quantile(xs, 0.5);
const table = (header, rows) =>
  [
    `| ${header.join(" | ")} |`,
    `| ${header.map(() => "---").join(" | ")} |`,
    ...rows.map((r) => `| ${r.join(" | ")} |`),
  ].join("\n");
const p50p99 = (xs) => `${f(quantile(xs, 0.5))} / ${f(quantile(xs, 0.99))}`;
const LAYOUT_NAMES = (r) => ({
  spread: `${r.settings.channels} channels × ${r.settings.watchers / r.settings.channels}`,
  one: `one channel × ${r.settings.watchers}`,
});

export function render(r) {
  const s = r.settings;
  const names = LAYOUT_NAMES(r);
  const layouts = Object.keys(names);
  const cellsOf = (layout, watchers) => r.cells.filter((c) => c.layout === layout && c.watchers === watchers);

  const summary = layouts.flatMap((layout) =>
    [0, s.watchers].map((watchers) => {
      const cs = cellsOf(layout, watchers);
      const base = median(cellsOf(layout, 0).map((c) => c.rps));
      return [
        names[layout],
        watchers,
        cs.map((c) => n0(c.rps)).join(", "),
        watchers === 0 ? "1" : f(median(cs.map((c) => c.rps)) / base),
        `${f(median(cs.map((c) => c.p50Ms)))} / ${f(median(cs.map((c) => c.p99Ms)))}`,
        `${n0(median(cs.map((c) => c.serverCpuUsPerMute)))} / ${n0(median(cs.map((c) => c.redisCpuUsPerMute)))}`,
        watchers === 0
          ? "—"
          : f(
              (median(cs.map((c) => c.serverCpuUsPerMute)) -
                median(cellsOf(layout, 0).map((c) => c.serverCpuUsPerMute))) /
                (layout === "one" ? s.watchers : s.watchers / s.channels),
              1,
            ),
        watchers === 0 ? "—" : n0(median(cs.map((c) => c.deliveriesPerS))),
        watchers === 0 ? "—" : n0(median(cs.map((c) => c.endToEndMutesPerS))),
        watchers === 0 ? "—" : cs.map((c) => n0(c.drainMs)).join(", "),
        f(median(cs.map((c) => c.clientCpuShare * 100)), 0),
        cs.reduce((n, c) => n + c.non2xx + c.socketErrors, 0) +
          (watchers === 0 ? 0 : cs.reduce((n, c) => n + c.missing, 0)),
        watchers === 0 ? "—" : cs.reduce((n, c) => n + c.reconnects, 0),
      ];
    }),
  );

  const delayRows = layouts.map((layout) => {
    const ds = r.delays.filter((d) => d.layout === layout);
    const ps = ds.flatMap((d) => d.probes);
    const perMute = layout === "one" ? s.watchers : s.watchers / s.channels;
    const loaded = cellsOf(layout, s.watchers).flatMap((c) => c.loadedProbes);
    return [
      names[layout],
      ps.length,
      p50p99(ps.map((p) => p.sentToAck)),
      p50p99(ps.map((p) => p.ackToNotify)),
      p50p99(ps.map((p) => p.ackToFirst)),
      `**${p50p99(ps.map((p) => p.ackToLast))}**`,
      p50p99(ps.map((p) => p.sentToLast)),
      `${p50p99(loaded.map((p) => p.ackToLast))} (${loaded.length})`,
      `${f(median(ds.map((d) => d.cpuUsPerProbe)) / 1000)} ms (${f(median(ds.map((d) => d.cpuUsPerProbe)) / perMute, 1)} µs per delivery)`,
      `${f(median(ds.map((d) => d.clientCpuUsPerProbe)) / 1000)} ms`,
    ];
  });

  const mem = r.memory;
  const memRows = mem.map((m) => [
    m.label,
    f(m.rssKb / 1024, 1),
    f(m.heapKb / 1024, 1),
    f(m.externalKb / 1024, 1),
    m.fds,
    Object.entries(m.redis)
      .map(([name, count]) => `${name} ${count}`)
      .join(", "),
    m.subscriptions,
  ]);
  const idle = mem[0];
  const perWatcher = layouts.map((layout) => {
    const at = mem.find((m) => m.label.includes(`(${layout})`) && m.label.includes("attached"));
    return at === undefined
      ? `${names[layout]}: —`
      : `${names[layout]}: RSS ${f(((at.rssKb - idle.rssKb) * 1024) / s.watchers / 1024, 1)} kB, live heap ${f(((at.heapKb - idle.heapKb) * 1024) / s.watchers / 1024, 1)} kB per watcher`;
  });

  const roundRows = r.cells.map((c) => [
    c.round,
    names[c.layout],
    c.watchers,
    n0(c.rps),
    `${f(c.p50Ms)} / ${f(c.p99Ms)}`,
    `${n0(c.serverCpuUsPerMute)} / ${n0(c.redisCpuUsPerMute)}`,
    f(c.clientCpuShare * 100, 0),
    c.watchers === 0 ? "—" : `${n0(c.deliveries)} (${c.missing} missing, ${c.reconnects} reconnects)`,
    c.watchers === 0 ? "—" : n0(c.drainMs),
    n0(c.lagMs),
    c.non2xx + c.socketErrors,
  ]);

  const la = (xs) => xs.map((x) => x.toFixed(2)).join(" ");
  return `${measuredLine("pstn-watchers", new Date(r.startedAt))}

- redis-server ${r.machine.redisVersion}. Shared with other work: load average (1/5/15 min) ${la(r.loadavg.start)} at the start, ${la(r.loadavg.end)} at the end.
- Pinning: ${r.pinning}. One boardline instance on a redis-server of its own; ${n0(r.elapsedS)} s in all.
- Watchers: ${
    r.protocol === "sse"
      ? "WatchPstnEvents over JSON: server-sent events (`POST /v1/channel/pstn/events:watch`), one HTTP/1.1 connection each, all in one Node process"
      : `WatchPstnEvents as gRPC server streams (the gRPC protocol over node:http2 in one Node process, each
  message decoded with protobuf-es), ${s.streamsPerSession} streams per HTTP/2 connection (${s.watchers / s.streamsPerSession} connections)`
  }, one channel each, started from the channel's last event id; a watch ended with UNAVAILABLE is opened again from its last event id, as a client does. Mutes: JSON \`POST /v1/channel/pstn/mute\`, wrk c${s.concurrency}, ${s.warmup} s
  warm-up + ${s.seconds} s per cell, bodies taking turns over the layout's channels and ${"50"} uids.
- Layouts: "${names.spread}" (every mute goes to the next of the 100 channels: ${s.watchers / s.channels} deliveries per
  mute) and "${names.one}" (every mute on that channel: ${s.watchers} deliveries per mute). ${s.rounds} rounds; in each,
  per layout, the cell without watchers and the cell with them back to back, without first in odd rounds, last in even ones.

### Mute throughput with 0 and ${s.watchers} watchers

Medians over the rounds. "mutes/s" is what wrk got acknowledged; "delivered/s" the events that reached the
watchers from the cell's start until the last one had every event, and "end-to-end mutes/s" the same in mutes
(delivered ÷ watchers per mute); "caught up after" is how long after the load ended the last watcher had its
last event. CPU µs per mute: the server process's and redis-server's user + system time over the cell
(\`/proc/<pid>/stat\`) ÷ mutes (stream entries added); "per delivery": what a mute costs the server more with the
watchers than without, ÷ the deliveries per mute. CPU time is the figure a busy machine distorts least: mutes/s
and delays also move with what else runs on the servers' CPU. "client CPU" is this bench's Node process (watchers and probes), which shares
the load CPU with wrk.

${table(
  [
    "layout",
    "watchers",
    "mutes/s (each round)",
    "÷ no watchers",
    "p50 / p99 ms",
    "CPU µs/mute server / Redis",
    "server CPU µs per delivery",
    "delivered/s",
    "end-to-end mutes/s",
    "caught up after (ms, each round)",
    "client CPU %",
    "errors + missing",
    "reconnects",
  ],
  summary,
)}

### Delivery delay

Sequential probes with every watcher attached: one mute at a time (JSON, from the process that also runs the
watchers, so one clock), each waited for at every watcher of its channel, then 10–20 ms apart. ms, p50 / p99.
"plain subscriber": a bare ioredis SSUBSCRIBE on the channel's notify channel in the same process — the
notification alone, the floor under any watcher (negative: before the mute's answer was read). "under load": a
probe every 50 ms while the cell with watchers ran (count in brackets). "server CPU per probe": boardline's CPU time
over the sequential probes ÷ probes (the mute and its deliveries), and that ÷ the deliveries per mute. "watchers' CPU
per probe": this process's, receiving the event at every watcher one after another — part of the last watcher's
delay here that watchers on machines of their own would not add.

${table(
  [
    "layout",
    "probes",
    "mute sent → ack",
    "ack → plain subscriber",
    "ack → first watcher",
    "ack → last watcher",
    "sent → last watcher",
    "under load: ack → last",
    "server CPU per probe",
    "watchers' CPU per probe",
  ],
  delayRows,
)}

### Memory and Redis connections

boardline's RSS (median of 5 readings), live heap and external memory after two full GCs
(bench/lib/gc-probe.cjs), open file descriptors, Redis connections by client name, shard channels subscribed.

${table(["when", "RSS MB", "live heap MB", "external MB", "fds", "Redis connections", "shard channels"], memRows)}

Per watcher (attached − no watcher, ÷ ${s.watchers}): ${perWatcher.join("; ")}.

### Checks

- Events received by the watchers: ${n0(r.events)}; out of order: ${r.outOfOrder}; errors: ${r.errors.length}${r.errors.length > 0 ? ` (${r.errors.slice(0, 5).join("; ")})` : ""}.
- Attaching ${s.watchers} watchers at once (until each had its channel's attach mute), ms: ${r.attaches.map((a) => `${a.layout} ${n0(a.ms)} (loop delay ${n0(a.lagMs)}${a.reconnects > 0 ? `, ${a.reconnects} reconnects` : ""})`).join(", ")}; "loop delay": the longest event-loop delay boardline saw meanwhile (\`nodejs_eventloop_lag_max_seconds\`). Attach mutes answered 503 and sent again: ${r.mutes503}.
- Probe mutes that failed (left out of the delays): ${r.muteFailures.length === 0 ? "none" : `${r.muteFailures.length} (${[...new Set(r.muteFailures)].slice(0, 3).join("; ")})`}.
- Watches ended with UNAVAILABLE (or a transport error, which a gRPC client sees as UNAVAILABLE) and opened again from their last event id: ${
    Object.keys(r.reconnects).length === 0
      ? "none"
      : Object.entries(r.reconnects)
          .map(([why, n]) => `${n} × "${why}"`)
          .join("; ")
  }.

<details><summary>Every cell</summary>

${table(
  [
    "round",
    "layout",
    "watchers",
    "mutes/s",
    "p50 / p99 ms",
    "CPU µs/mute server / Redis",
    "client CPU %",
    "deliveries",
    "caught up after ms",
    "longest loop delay ms",
    "non-2xx + socket errors",
  ],
  roundRows,
)}

</details>
`;
}

const [, script, resultFile] = process.argv;
if (script !== undefined && resultFile !== undefined && import.meta.url === pathToFileURL(script).href) {
  process.stdout.write(render(JSON.parse(readFileSync(resultFile, "utf8"))));
}
