/**
 * Renders bench/scenarios/pstn-line.mjs's result as its section of docs/performance.md. Every
 * measurement runs at least twice (MuteAll passes, report rounds); the headline takes the worse.
 */
import os from "node:os";
import { measuredLine } from "./document.mjs";

/** @param {number[]} xs @param {number} q nearest rank */
const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : (s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] ?? 0);
};
/** @param {number} n @param {number} [digits] */
const fmt = (n, digits = 0) =>
  Number.isFinite(n) ? n.toLocaleString("en-US", { maximumFractionDigits: digits }).replace(/,/g, " ") : "—";
/** @param {number[]} xs */
const range = (xs) =>
  Math.min(...xs) === Math.max(...xs) ? fmt(xs[0] ?? Number.NaN) : `${fmt(Math.min(...xs))}–${fmt(Math.max(...xs))}`;
/** @param {number[]} xs @param {number} [digits] "p50 / p99 / max" */
const spread = (xs, digits = 1) =>
  `${fmt(quantile(xs, 0.5), digits)} / ${fmt(quantile(xs, 0.99), digits)} / ${fmt(Math.max(...xs), digits)}`;

/**
 * @typedef {{ pass: number, mute: boolean, wallMs: number, scriptUs: number, redisUs: number, lagMs: number, pingMaxMs: number, changed: number, unchanged: number, scriptCalls: number, xadds: number }} MuteAllCall
 * @typedef {{ pass: number, calls: MuteAllCall[], idleLagMs: number[], windowMs: number, streamLength: number }} Pass
 * @typedef {{ name: string, round: number, rps: number, p50: number, p99: number, blUs: number, redisUs: number, lagMs: number, errors: number, firstError?: string, outcomes: Record<string, number>, perCall: number }} Cell
 * @typedef {{ stalled_pct: number, seconds: number, gaps_over_2ms: number, max_gap_ms: number }} Stall
 */

/**
 * @param {{ joins: { count: number, ms: number }, passes: Pass[], cells: Cell[], stallBefore: Stall, stallAfter: Stall,
 *   redisVersion: string, errorLines: number, startedAt: Date, loadStart: number[], pinning: string,
 *   settings: { participants: number, calls: number, warmup: number, seconds: number, rounds: number, c: number } }} r
 */
export function render(r) {
  const s = r.settings;
  const elapsed = (Date.now() - r.startedAt.getTime()) / 1000;
  /** @param {Stall} x */
  const stall = (x) =>
    `${fmt(x.stalled_pct, 2)} % of ${x.seconds} s lost, ${x.gaps_over_2ms} gaps over 2 ms, the longest ${fmt(x.max_gap_ms, 1)} ms`;

  // MuteAll: the worse pass by its p99 time to answer.
  const p99Of = (/** @type {Pass} */ p) =>
    quantile(
      p.calls.map((c) => c.wallMs),
      0.99,
    );
  const worst = [...r.passes].sort((a, b) => p99Of(b) - p99Of(a))[0];
  const passRows = r.passes.map((p) => {
    const cs = p.calls;
    return `| ${p.pass} | ${cs.length} | ${spread(cs.map((c) => c.wallMs))} | ${spread(cs.map((c) => c.scriptUs / 1000))} | ${fmt(
      quantile(
        cs.map((c) => c.redisUs / 1000),
        0.5,
      ),
      1,
    )} | ${range(cs.map((c) => c.scriptCalls))} | ${range(cs.map((c) => c.xadds))} | ${range(cs.filter((c) => c.mute).map((c) => c.changed))} / ${range(cs.filter((c) => !c.mute).map((c) => c.changed))} | ${spread(cs.map((c) => c.lagMs))} | ${spread(p.idleLagMs)} | ${spread(cs.map((c) => c.pingMaxMs))} | ${fmt(p.streamLength)} |`;
  });

  // Reports against Mute: each cell's rate ÷ the Mute cell's of its round; the worse round is the headline.
  const kinds = [...new Set(r.cells.map((c) => c.name))];
  const muteOf = (/** @type {number} */ round) => r.cells.find((c) => c.name === "Mute" && c.round === round);
  const cellRows = r.cells
    .slice()
    .sort((a, b) => a.round - b.round)
    .map((c) => {
      const m = muteOf(c.round);
      const ratio = m === undefined ? Number.NaN : c.rps / m.rps;
      const outcomes = Object.entries(c.outcomes)
        .map(([k, n]) => `${k} ${fmt(n)}`)
        .join(", ");
      return `| ${c.name} | ${c.round} | ${fmt(c.rps)} | ${c.name === "Mute" ? "1" : fmt(ratio, 2)} | ${fmt(c.p50, 2)} / ${fmt(c.p99, 2)} | ${fmt(c.blUs)} / ${fmt(c.redisUs)} | ${fmt(c.lagMs, 1)} | ${c.errors}${c.firstError ? ` (${c.firstError})` : ""} | ${outcomes || "—"} |`;
    });
  const headline = kinds
    .filter((k) => k !== "Mute")
    .map((k) => {
      const ratios = r.cells
        .filter((c) => c.name === k)
        .map((c) => ({ c, m: muteOf(c.round) }))
        .filter((x) => x.m !== undefined)
        .map((x) => ({ ratio: x.c.rps / (x.m?.rps ?? Number.NaN), rps: x.c.rps, mute: x.m?.rps ?? Number.NaN }));
      const w = ratios.sort((a, b) => a.ratio - b.ratio)[0];
      return w === undefined
        ? `- ${k}: not measured.`
        : `- ${k}: **${fmt(w.ratio, 2)}× Mute's rate** in its worse round (${fmt(w.rps)} reports/s against ${fmt(w.mute)} mutes/s).`;
    });

  const worstCalls = worst?.calls ?? [];
  return `${measuredLine("pstn-line", r.startedAt)}

Every measurement ran at least twice in this run (${r.passes.length} MuteAll passes, ${s.rounds} report round${s.rounds === 1 ? "" : "s"}) and the headline
figures are the worse of them: the machine is shared and its figures drift; the rows show each.

- redis-server ${r.redisVersion}. Load average (1/5/15 min) ${r.loadStart.map((x) => x.toFixed(2)).join(" ")} at the start, ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")} at the end; ${fmt(elapsed)} s in all.
- Pinning: ${r.pinning}.
- Stall probe (bench/lib/stall.mjs on the servers' CPU while the other spins): before ${stall(r.stallBefore)}; after ${stall(r.stallAfter)}.
- boardline: one instance, \`NODE_ENV=production\`, the package's V8 flags, \`GUESS_LIMIT=0\`, \`PSTN_PRESENCE_TTL_SECONDS=3600\`; error-level log lines during the run: ${r.errorLines}.
- The line: ${fmt(r.joins.count)} participants joined one channel through ReportLine (gRPC, ${s.c} at a time) in ${fmt(r.joins.ms)} ms (${fmt(r.joins.count / (r.joins.ms / 1000))} joins/s).

### MuteAll on ${fmt(s.participants)} participants

The host's MuteAll over gRPC (host passphrase), ${s.calls} calls per pass one after another, mute and unmute in turn, each
changing the whole line. Worse pass (${worst?.pass ?? "—"}): the answer in **${fmt(
    quantile(
      worstCalls.map((c) => c.wallMs),
      0.5,
    ),
    1,
  )} ms p50, ${fmt(
    quantile(
      worstCalls.map((c) => c.wallMs),
      0.99,
    ),
    1,
  )} ms p99**; the script
in Redis **${fmt(
    quantile(
      worstCalls.map((c) => c.scriptUs / 1000),
      0.5,
    ),
    1,
  )} ms p50, ${fmt(
    quantile(
      worstCalls.map((c) => c.scriptUs / 1000),
      0.99,
    ),
    1,
  )} ms p99**, in ${range(worstCalls.map((c) => c.scriptCalls))} script call per MuteAll; boardline's longest event-loop delay
over a call ${fmt(
    quantile(
      worstCalls.map((c) => c.lagMs),
      0.99,
    ),
    1,
  )} ms p99 against ${fmt(quantile(worst?.idleLagMs ?? [], 0.99), 1)} ms idle.

- Time to answer: from sending the call to reading its answer, in this process.
- Redis time: SLOWLOG (\`slowlog-log-slower-than 0\` on this run's redis-server during the passes) — the longest
  EVALSHA of the call (the script), and every command of the call summed (the passphrase read, the script, the
  lease sweep if it ran meanwhile). Script calls and XADDs: INFO commandstats over the call (commands a script
  runs count too).
- Event-loop delay: boardline's \`nodejs_eventloop_lag_max_seconds\` (prom-client, a 10 ms sampling timer, so
  an idle loop reads about 10 ms) over the call, against the same reading over idle windows as long as the
  pass's median call (${worst === undefined ? "—" : fmt(worst.windowMs, 1)} ms).
- PING: the longest a PING from another Redis connection, sent one after another during the call, waited:
  how long the script holds Redis from every other client.
- Event stream: the channel's event stream length after the pass (the stream keeps about 10 000 events; each
  MuteAll adds one per participant changed and one summary).

| pass | calls | answer ms p50 / p99 / max | script in Redis ms p50 / p99 / max | all Redis ms in the call (p50) | script calls per MuteAll | XADDs per MuteAll | changed (mute / unmute) | event-loop delay ms p50 / p99 / max | idle event-loop delay ms p50 / p99 / max | PING wait ms p50 / p99 / max | stream length |
| ---- | ----- | ------------------------- | ---------------------------------- | ------------------------------ | ------------------------ | ----------------- | ----------------------- | ----------------------------------- | ---------------------------------------- | ---------------------------- | ------------- |
${passRows.join("\n")}

### Reports a second beside Mute

One client for every kind (bench/lib/grpc-unary.mjs: gRPC over node:http2, ${s.c} workers each on its own connection,
calling one after another), ${s.warmup} s of warm-up then ${s.seconds} s per cell, ${s.rounds} round${s.rounds === 1 ? "" : "s"}, the cells' order turning each round.
Mute, presence and keypad mute: participants of the line in turn, each worker its own, the sequence growing; Mute
and keypad mute each flip the participant's state, so every one of them writes and emits an event. Join + leave: uids off the line, each joined then left (two reports,
counted as two). Ratio: the cell's reports/s ÷ the Mute cell's of the same round. CPU µs per call: the
process's user + system time over the cell (\`/proc/<pid>/stat\`) ÷ calls.

${headline.join("\n")}

| call | round | calls/s | ÷ Mute (same round) | p50 / p99 ms | CPU µs/call boardline / Redis | event-loop delay max ms | errors | outcomes |
| ---- | ----- | ------- | ------------------- | ------------ | ----------------------------- | ----------------------- | ------ | -------- |
${cellRows.join("\n")}`;
}
