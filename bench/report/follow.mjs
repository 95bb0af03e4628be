/**
 * Renders bench/scenarios/follow.mjs's cases as its section of docs/performance.md: one row per case,
 * and the verdicts against the targets (10 000 tasks followed on time by one instance; three instances
 * sharing the polls evenly).
 */
import { measuredLine } from "./document.mjs";

/**
 * One case's figures, as bench/scenarios/follow.mjs measures them.
 * @typedef {{ instances: number, tasks: number, createS: number, pollsPerS: number, neededPerS: number,
 *   share: number[], onTimeShare: number, p50LateS: number, p99LateS: number, instanceCpuUsPerPoll: number,
 *   redisCpuUsPerPoll: number, simulatorCpuUsPerPoll: number, instanceRssMb: number[],
 *   bareQueriesPerS: number }} FollowCase
 */

/** @param {number} x */
const n0 = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString("en-US").replace(/,/g, " ") : "—");
/** @param {number} x */
const pct = (x) => `${(100 * x).toFixed(1)} %`;
/** @param {boolean} ok */
const verdict = (ok) => (ok ? "PASS" : "**FAIL**");
/** How far from an even third each of three instances' share of the polls may be. */
const EVEN_SHARE_TOLERANCE = 0.1;

/**
 * @param {{ cases: FollowCase[], startedAt: Date, windowS: number }} r
 */
export function render(r) {
  const rows = r.cases.map(
    (c) =>
      `| ${c.instances} × ${n0(c.tasks)} | ${n0(c.pollsPerS)} (${n0(c.neededPerS)}) | ${pct(c.onTimeShare)} | ≤ ${c.p50LateS} / ≤ ${c.p99LateS} s | ${c.share.map(pct).join(" / ")} | ${n0(c.instanceCpuUsPerPoll)} / ${n0(c.redisCpuUsPerPoll)} / ${n0(c.simulatorCpuUsPerPoll)} | ${c.instanceRssMb.join(" / ")} | ${n0(c.bareQueriesPerS)} |`,
  );
  const one = r.cases.find((c) => c.instances === 1 && c.tasks === 10_000);
  const three = r.cases.find((c) => c.instances === 3);
  const targets = [];
  if (one !== undefined)
    targets.push(
      `| 10 000 tasks on one instance: p99 lateness | ≤ ${one.p99LateS} s (on time: ${pct(one.onTimeShare)}) | ≤ 1 s | ${verdict(one.p99LateS <= 1)} |`,
    );
  if (three !== undefined)
    targets.push(
      `| ${n0(three.tasks)} tasks on three instances: each one's share of the polls | ${three.share.map(pct).join(" / ")} | 33 % ± ${EVEN_SHARE_TOLERANCE * 100} points | ${verdict(three.share.every((s) => Math.abs(s - 1 / 3) <= EVEN_SHARE_TOLERANCE))} |`,
    );
  return `${measuredLine("follow", r.startedAt)}

Each case has its own redis-server, the simulator in a process of its own (every task stays in flight) and the
instances as \`npm start\` runs them; tasks are made by ConvertFile, then measured over a ${r.windowS} s window once
each task is due every 5 s. "Late" is each poll's start after its due time, from the instances' own
\`boardline_conversion_poll_lateness_seconds\` (bucket bounds, so "≤"). "Needed" is tasks ÷ 5 s; the polls made
are a little fewer because a task's next poll is 5 s after its last one _ended_. The anchor is a bare client
(keep-alive fetch, 64 at once) querying the same simulator right after the window: the most queries per second
anything on this machine gets from it.

### Targets

| check | measured | target | verdict |
| ----- | -------- | ------ | ------- |
${targets.length > 0 ? targets.join("\n") : "| (no case of 10 000 tasks on one instance or of three instances ran) | — | — | — |"}

### Every case

| instances × tasks | polls/s (needed) | on time (≤ 1 s late) | late p50 / p99 | share of polls | CPU µs per poll: instances / Redis / simulator | RSS MB | anchor queries/s |
| ----------------- | ---------------: | -------------------: | -------------- | -------------- | ---------------------------------------------: | -----: | ---------------: |
${rows.join("\n")}`;
}
