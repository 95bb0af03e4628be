/**
 * Renders bench/scenarios/conversion-queue.mjs's result as its section of docs/performance.md.
 */
import os from "node:os";
import { measuredLine } from "./document.mjs";

/** @param {number[]} xs */
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length / 2;
  return s.length === 0
    ? Number.NaN
    : s.length % 2 === 1
      ? (s[Math.floor(m)] ?? Number.NaN)
      : ((s[m - 1] ?? 0) + (s[m] ?? 0)) / 2;
};
/** @param {number[]} xs @param {number} q nearest rank */
const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : (s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] ?? 0);
};
/** @param {number} n @param {number} [digits] */
const fmt = (n, digits = 0) =>
  Number.isFinite(n) ? n.toLocaleString("en-US", { maximumFractionDigits: digits }).replace(/,/g, " ") : "—";
/** @param {number[]} xs "least–most" of ratios, or the one value */
const range = (xs) =>
  fmt(Math.min(...xs), 2) === fmt(Math.max(...xs), 2)
    ? fmt(xs[0] ?? Number.NaN, 2)
    : `${fmt(Math.min(...xs), 2)}–${fmt(Math.max(...xs), 2)}`;
/** @param {number[]} xs "p50 / p90 / p99 / max" in whole ms */
const spread = (xs) =>
  `${fmt(quantile(xs, 0.5))} / ${fmt(quantile(xs, 0.9))} / ${fmt(quantile(xs, 0.99))} / ${fmt(Math.max(...xs))}`;

/**
 * @typedef {{ name: string, round: number, rps: number, p50: number, p99: number, blUs: number, redisUs: number, commands: number, scripts: number, errors: number, queued: number, queuedDuring: number, rssMb: number }} Cell
 * @typedef {{ waitMs: number, idealWaitMs: number, lateMs: number }} Request
 * @typedef {{ instances: number, delayMs: number, burst: number, requests: Request[], answerMs: number[], maxPosition: number, submissionsPerS: number, headMs: number, afterAnswersPerS: number, drainMs: number, refused: number, outcomes: Record<string, number> }} Burst
 * @typedef {{ stalled_pct: number, seconds: number, gaps_over_2ms: number, max_gap_ms: number }} Stall
 */

/**
 * @param {{ calls: { cells: Cell[], checks: string[], rssIdle: number, queued: number, redisKbPerQueued: number, errorLines: number },
 *   cases: { instances: number, delayMs: number, bursts: Burst[], errorLines: number }[], stallBefore: Stall, stallAfter: Stall,
 *   redisVersion: string, startedAt: Date, loadStart: number[], pinning: string,
 *   settings: { warmup: number, seconds: number, rounds: number, c: number, qps: number, paceMs: number, burst: number, queueMax: number } }} r
 */
export function render(r) {
  const s = r.settings;
  const elapsed = (Date.now() - r.startedAt.getTime()) / 1000;
  /** @param {Stall} x */
  const stall = (x) =>
    `${fmt(x.stalled_pct, 2)} % of ${x.seconds} s lost, ${x.gaps_over_2ms} gaps over 2 ms, the longest ${fmt(x.max_gap_ms, 1)} ms`;
  const { cells } = r.calls;
  const names = ["Mute", "ConvertFile queued", "ConvertFile reused"];
  const muteOf = (/** @type {number} */ round) => cells.find((c) => c.name === "Mute" && c.round === round);
  /** Each cell's req/s ÷ the Mute cell's of its round. */
  const ratios = (/** @type {string} */ name) =>
    cells
      .filter((c) => c.name === name)
      .map((c) => c.rps / (muteOf(c.round)?.rps ?? Number.NaN))
      .filter(Number.isFinite);
  const summary = names.map((name) => {
    const cs = cells.filter((c) => c.name === name);
    const rs = ratios(name);
    return `| ${name} | ${cs.map((c) => fmt(c.rps)).join(", ")} | ${fmt(median(cs.map((c) => c.rps)))} | ${name === "Mute" ? "1" : range(rs)} | ${fmt(median(cs.map((c) => c.p50)), 2)} / ${fmt(median(cs.map((c) => c.p99)), 2)} | ${fmt(median(cs.map((c) => c.blUs)))} / ${fmt(median(cs.map((c) => c.redisUs)))} | ${fmt(median(cs.map((c) => c.commands)), 1)} / ${fmt(median(cs.map((c) => c.scripts)), 2)} | ${cs.reduce((a, c) => a + c.errors, 0)} |`;
  });
  const rows = [...cells]
    .sort((a, b) => a.round - b.round)
    .map(
      (c) =>
        `| ${c.name} | ${c.round} | ${fmt(c.rps)} | ${c.name === "Mute" ? "1" : fmt(c.rps / (muteOf(c.round)?.rps ?? Number.NaN), 2)} | ${fmt(c.p50, 2)} / ${fmt(c.p99, 2)} | ${fmt(c.blUs)} / ${fmt(c.redisUs)} | ${fmt(c.commands, 1)} / ${fmt(c.scripts, 2)} | ${c.errors} | ${fmt(c.queuedDuring)} (${fmt(c.queued)}) |`,
    );
  const queuedRatios = ratios("ConvertFile queued");
  const reusedRatios = ratios("ConvertFile reused");

  const burstRows = r.cases.flatMap((k) =>
    k.bursts.map((b) => {
      const outcomes = Object.entries(b.outcomes)
        .filter(([, n]) => n > 0)
        .map(([o, n]) => `${o} ${fmt(n)}`)
        .join(", ");
      return `| ${k.instances} | ${fmt(k.delayMs)} | ${b.burst} | ${spread(b.answerMs)} | ${fmt(b.maxPosition)} | ${spread(b.requests.map((x) => x.waitMs))} | ${spread(b.requests.map((x) => x.idealWaitMs))} | ${spread(b.requests.map((x) => x.lateMs))} | ${fmt(b.headMs)} | ${fmt(b.submissionsPerS, 1)} | ${fmt(b.afterAnswersPerS, 1)} | ${fmt(b.drainMs / 1000, 2)} | ${b.refused} | ${outcomes || "—"} |`;
    }),
  );
  const allBursts = r.cases.filter((k) => k.delayMs === 0).flatMap((k) => k.bursts);
  const worstLate = Math.max(
    ...allBursts.map((b) =>
      quantile(
        b.requests.map((x) => x.lateMs),
        0.99,
      ),
    ),
  );
  const slowest = Math.min(...allBursts.map((b) => b.submissionsPerS));
  const refused = allBursts.reduce((a, b) => a + b.refused, 0);

  return `${measuredLine("conversion-queue", r.startedAt)}

Run once, ${s.rounds} rounds of cells: the req/s and latencies move with what else ran on the servers' CPU (see the stall probe and
the load average); CPU time per call moves least. No target: figures to compare between runs.

- redis-server ${r.redisVersion}. Load average (1/5/15 min) ${r.loadStart.map((x) => x.toFixed(2)).join(" ")} at the start, ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")} at the end; ${fmt(elapsed)} s in all.
- Pinning: ${r.pinning}.
- Stall probe (bench/lib/stall.mjs on the servers' CPU while the other spins): before ${stall(r.stallBefore)}; after ${stall(r.stallAfter)}.
- boardline: \`NODE_ENV=production\`, the package's V8 flags, \`GUESS_LIMIT=0\`, the conversion simulator as its backend
  (bench/lib/watch-simulator.mjs, a process of its own); error-level log lines: ${r.calls.errorLines} in the cells, ${r.cases.reduce((a, k) => a + k.errorLines, 0)} in the bursts.

### Accepted ConvertFile calls a second on one instance

The queue's own cost: ConvertFile with \`"reuse": false\`, so every call writes a task's record and queues it (one
record write, one script on the project's keys, the project put in \`conv-queues\`, the submitter woken), beside
two anchors of the same run: **Mute** (one Redis write) and **ConvertFile reused**, an identical request without
\`reuse\`, answered with a task that ended before the cells. One project, \`conversion_qps\` not set (the submitter
takes one request a second), \`CONVERSION_QUEUE_MAX\` ${fmt(s.queueMax)} so no call is refused. wrk, one thread, ${s.c}
keep-alive HTTP/1.1 connections, JSON routes; ${s.warmup} s warm-up + ${s.seconds} s per cell, ${s.rounds} rounds, the order
turning each round. CPU µs per call: the process's user + system time over the cell (\`/proc/<pid>/stat\`) ÷
calls; Redis commands per call: INFO commandstats over the cell (the commands a script runs count too, and the
submitter's and follower's own), script calls beside them.

- ConvertFile queued: **${fmt(median(queuedRatios), 2)}× Mute's req/s** (median of the rounds; ${queuedRatios.map((x) => fmt(x, 2)).join(", ")}).
- ConvertFile reused: **${fmt(median(reusedRatios), 2)}× Mute's req/s** (${reusedRatios.map((x) => fmt(x, 2)).join(", ")}).
- The queue held ${fmt(r.calls.queued)} requests after the cells; Redis grew by ${fmt(r.calls.redisKbPerQueued, 2)} KB per queued request (used_memory).
  boardline's RSS: ${fmt(r.calls.rssIdle, 1)} MB before the cells, ${fmt(Math.max(...cells.map((c) => c.rssMb)), 1)} MB the most after one.

| call | req/s (each round) | median req/s | ÷ Mute (same round) | p50 / p99 ms (median) | CPU µs/call boardline / Redis (median) | Redis commands / script calls per call | errors |
| ---- | ------------------ | ------------ | ------------------- | --------------------- | -------------------------------------- | -------------------------------------- | ------ |
${summary.join("\n")}

| call | round | req/s | ÷ Mute | p50 / p99 ms | CPU µs/call boardline / Redis | Redis commands / script calls per call | errors | queued in the cell (queue after) |
| ---- | ----- | ----- | ------ | ------------ | ----------------------------- | -------------------------------------- | ------ | -------------------------------- |
${rows.join("\n")}

Checked before the cells (fetch, one call each):

${r.calls.checks.map((c) => `- ${c}`).join("\n")}

### From accept to submission under a burst of ${fmt(s.burst)}

One project with \`conversion_qps\` ${fmt(s.qps)} (a pace of ${s.paceMs} ms: ${fmt(1000 / s.paceMs, 1)} submissions a second at most),
the simulator holding it to ${fmt(s.qps)} creates a second (its token bucket: one over it is refused with the backend's
"too many tasks"). ${fmt(s.burst)} ConvertFiles of distinct documents sent at once (one connection each, spread over
the instances in turn), then every one waited for at the simulator; each case on a Redis and instances of its own.
The cases with a create answered late (the simulator makes the task on arrival and holds its answer, as a backend
across an ocean would) show what one submission at a time per project makes of the pace: each turn waits for
the backend's answer before the next.

- Answer: from sending the burst to reading each 200 answer, here.
- Wait: from a request's 200 answer (read here) to the simulator's accepted create of its document (its arrival
  there; same clock). A wait under 0 is a request submitted before its caller had read the answer.
- Ideal wait: a perfect pacer's, given the answers as they came: each request submitted at its answer or one
  pace after the previous submission, whichever is later, in the queue's order (first come, first served).
- Late: the simulator's create less that ideal submission, per request.
- Head: from the burst's first answer to its first create. Submissions/s: (requests − 1) ÷ the time from the
  first create to the last; after the answers: the same over the creates after the last answer was read, when
  no accept competes with the submitter for the instance's CPU; drained: from sending the burst to the last
  create. Refused: creates the simulator answered "too many tasks"; outcomes: the instances' own
  \`boardline_conversion_submissions_total\`.

Against a backend that answers at once, the worst p99 lateness over every burst: **${fmt(worstLate)} ms**; the slowest
effective rate **${fmt(slowest, 1)} submissions/s** (of ${fmt(s.qps)} allowed); creates refused by the simulator: **${refused}**.

| instances | create answered after ms | burst | answer ms p50 / p90 / p99 / max | deepest place | wait ms p50 / p90 / p99 / max | ideal wait ms p50 / p90 / p99 / max | late ms p50 / p90 / p99 / max | head ms | submissions/s | after the answers | drained s | refused | outcomes |
| --------- | ------------------------ | ----- | ------------------------------- | ------------- | ----------------------------- | ----------------------------------- | ----------------------------- | ------- | ------------- | ----------------- | --------- | ------- | -------- |
${burstRows.join("\n")}`;
}
