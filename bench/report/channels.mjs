/**
 * Renders bench/scenarios/channels.mjs's result as its section of docs/performance.md.
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
const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
};
const fmt = (n, digits = 0) =>
  Number.isFinite(n) ? n.toLocaleString("en-US", { maximumFractionDigits: digits }).replace(/,/g, " ") : "—";

export function render(r) {
  const { channels: CHANNELS, warmup: WARMUP, seconds: SECONDS, rounds: ROUNDS } = r.settings;
  const elapsed = (Date.now() - r.startedAt.getTime()) / 1000;
  const stall = (s) =>
    `${fmt(s.stalled_pct, 2)} % of ${s.seconds} s lost, ${s.gaps_over_2ms} gaps over 2 ms, the longest ${fmt(s.max_gap_ms, 1)} ms`;
  const byName = (name) => r.cells.filter((c) => c.name === name);
  const rows = ["Mute", "GetChannel", "CreateChannel"].map((name) => {
    const cs = byName(name);
    return `| ${name.padEnd(13)} | ${cs.map((c) => fmt(c.rps)).join(", ")} | ${fmt(median(cs.map((c) => c.rps)))} | ${fmt(median(cs.map((c) => c.p50)), 2)} / ${fmt(median(cs.map((c) => c.p99)), 2)} | ${fmt(median(cs.map((c) => c.blUs)))} / ${fmt(median(cs.map((c) => c.redisUs)))} | ${cs.reduce((a, c) => a + c.errors, 0)} |`;
  });
  const pages = r.passes.flatMap((p) => p.pages);
  const passRows = r.passes.map(
    (p, i) =>
      `| ListChannels, pass ${i + 1} | ${p.pages.length} | ${fmt(p.ms)} | ${fmt(median(p.pages), 1)} / ${fmt(quantile(p.pages, 0.99), 1)} / ${fmt(Math.max(...p.pages), 1)} | ${fmt(p.peakRss, 1)} (boardline) |`,
  );
  const scanRows = r.scans.map(
    (s, i) =>
      `| SCAN, pass ${i + 1} | 1 (the whole pass: ${s.rounds} SCAN calls, ${fmt(s.keysSeen)} passphrase keys read) | ${fmt(s.ms)} | ${fmt(s.ms / (s.channels / 1000), 1)} per 1 000 channels | ${fmt(s.rssPeakMb, 1)} (a bare Node + ioredis; ${fmt(s.rssBeforeMb, 1)} before) |`,
  );
  return `${measuredLine("channels", r.startedAt)}

Run once: the req/s and latencies move with what else ran on the servers' CPU (see the stall probe and the
load average); CPU time per request moves least.

- redis-server ${r.redisVersion}. Load average (1/5/15 min) ${r.loadStart.map((x) => x.toFixed(2)).join(" ")} at the start, ${os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")} at the end; ${fmt(elapsed)} s in all.
- Pinning: ${r.pinning}.
- Stall probe (bench/lib/stall.mjs on the servers' CPU while the other spins): before ${stall(r.stallBefore)}; after ${stall(r.stallAfter)}.
- boardline: one instance, \`NODE_ENV=production\`, the package's V8 flags, \`GUESS_LIMIT=0\`, \`PASSPHRASE_CACHE_MS\` default (1 000); error-level log lines during the run: ${r.errorLines}.

### Calls at c16

wrk, one thread, 16 keep-alive HTTP/1.1 connections, JSON routes; ${WARMUP} s warm-up + ${SECONDS} s per cell, ${ROUNDS} rounds
of Mute → GetChannel → CreateChannel. Mute: \`POST /v1/channel/pstn/mute\` on one channel. GetChannel: \`GET
/v1/channels/bench-room\` (the record, the mute snapshot and the newest whiteboard event). CreateChannel: \`POST
/v1/channels\`, a new id per request, both passphrases generated (the record marked pending, the index, two
passphrase records, the mark cleared, the audit entry: six Redis round trips one after another). CPU µs per
request: the process's user + system time over the cell (\`/proc/<pid>/stat\`) ÷ requests.

| call          | req/s (each round) | median req/s | p50 / p99 ms (median) | CPU µs/request boardline / Redis | errors |
| ------------- | ------------------ | ------------ | --------------------- | -------------------------------- | ------ |
${rows.join("\n")}

boardline's RSS: ${fmt(r.rssIdle, 1)} MB idle, ${fmt(Math.max(...r.cells.map((c) => c.rssMb)), 1)} MB the most after a cell.

### ListChannels over ${fmt(CHANNELS)} channels, against the same by SCAN

${fmt(CHANNELS)} channels of one project written straight into Redis in the documented schema in ${fmt(r.filled.ms / 1000, 1)} s (${fmt(r.filled.dbsize)} keys
in all, Redis used_memory ${fmt(r.filled.usedMb, 1)} MB). ListChannels: \`POST /v1/channels:list\`, \`page_size\` 1 000, each page after
the last one's answer, ${r.passes.length} passes over all ${fmt(CHANNELS / 1000)} pages: one ZRANGEBYLEX on the project's index, then the record of
each of its 1 000 channels. SCAN: what finding a channel's passphrases costs without the project's index (SCAN MATCH
\`pass:*\` COUNT 1 000 and an HMGET of every key found, one pipeline per batch) — here one full pass collecting the
project's channels, which is the least a listing by SCAN costs (it cannot start at a page: every page is the
whole pass). Its figure per 1 000 channels is the pass ÷ ${fmt(CHANNELS / 1000)}; one page of a listing, or one Rotate or Delete
by SCAN, takes the whole pass. With other projects' channels in the store, the pass grows with all of
them; the index does not (here the CreateChannel cells had left ${fmt(r.others)} channels of another project, whose
passphrase keys the pass read too). The last page of a listing whose size is a multiple of 1 000 is an empty one
(the one before it still carries a token).

| how                        | pages   | total ms | per page ms: p50 / p99 / max (SCAN: see text) | RSS MB |
| -------------------------- | ------- | -------- | ---------------------------------------------- | ------ |
${[...passRows, ...scanRows].join("\n")}

boardline's RSS: ${fmt(r.rssBeforeList, 1)} MB before the listing, ${fmt(r.rssAfterList, 1)} MB after it, ${fmt(r.hwm, 1)} MB the most over its whole life
(VmHWM). Per page over all passes: p50 ${fmt(median(pages), 1)} ms, p99 ${fmt(quantile(pages, 0.99), 1)} ms.`;
}
