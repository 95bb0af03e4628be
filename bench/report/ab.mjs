/**
 * Renders bench/ab.sh's cells as the "ab" section of docs/performance.md, with a verdict per protocol on
 * this tree (tracing off, as production runs by default) against the earlier build:
 *
 *   node bench/report/ab.mjs <results.jsonl>
 *
 * Environment (set by bench/ab.sh): BENCH_AB_LABEL (what the earlier build is, e.g. its commit),
 * BENCH_AB_STARTED (ms since the epoch), BENCH_AB_ROUNDS, BENCH_SECONDS, BENCH_WARMUP, BENCH_AB_C.
 *
 * The verdict is judged on CPU time per call, the figure a busy machine moves least (it takes CPU away,
 * which lowers req/s and raises latency, but adds no CPU time), as the median of the per-round ratios
 * (each round's cells run one after the other, so drift between rounds cancels out): "slower" above
 * 1.05 times the earlier build's, "faster" below 0.95 times, else "unchanged"; req/s is shown beside it.
 */
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { measuredLine, writeSection } from "./document.mjs";

/** @typedef {{ variant: string, proto: string, round: number, rps: number, p50_ms: number, p99_ms: number, requests: number, cpu_s: number, non2xx: number, errors: number }} Cell */

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
/** @param {number} n @param {number} [digits] */
const fmt = (n, digits = 0) =>
  Number.isFinite(n) ? n.toLocaleString("en-US", { maximumFractionDigits: digits }).replace(/,/g, " ") : "—";

/** @param {Cell} c */
const cpuUs = (c) => (c.cpu_s * 1e6) / c.requests;

/**
 * The verdict on `variant` against `base` for one protocol: the median per-round ratios and the word.
 * @param {Cell[]} cells
 * @param {string} proto
 * @param {string} variant
 * @param {string} base
 */
export function verdict(cells, proto, variant, base) {
  const rounds = [...new Set(cells.map((c) => c.round))];
  const rps = [];
  const cpu = [];
  for (const round of rounds) {
    const a = cells.find((c) => c.proto === proto && c.variant === variant && c.round === round);
    const b = cells.find((c) => c.proto === proto && c.variant === base && c.round === round);
    if (a === undefined || b === undefined) continue;
    rps.push(a.rps / b.rps);
    cpu.push(cpuUs(a) / cpuUs(b));
  }
  const rpsRatio = median(rps);
  const cpuRatio = median(cpu);
  const word = cpuRatio > 1.05 ? "slower" : cpuRatio < 0.95 ? "faster" : "unchanged";
  return { rpsRatio, cpuRatio, rps, cpu, word };
}

/** @param {Cell[]} cells */
export function render(cells, env = process.env) {
  const label = env.BENCH_AB_LABEL || "the earlier build";
  const startedAt = new Date(Number(env.BENCH_AB_STARTED) || Date.now());
  const variants = [...new Set(cells.map((c) => c.variant))];
  const names = {
    before: `before (${label})`,
    off: "this tree",
    on: "this tree, tracing on",
    "on-10%": "this tree, tracing on, 1 in 10 sampled",
    flags: `this tree, node flags \`${env.BENCH_AB_FLAGS ?? ""}\``,
  };
  /** @param {string} v */
  const nameOf = (v) => names[/** @type {keyof typeof names} */ (v)] ?? v;
  const rows = [];
  const verdicts = [];
  for (const proto of ["JSON", "gRPC"]) {
    for (const v of variants) {
      const cs = cells.filter((c) => c.proto === proto && c.variant === v);
      const failed = cs.reduce((a, c) => a + c.non2xx + c.errors, 0);
      rows.push(
        `| ${proto} | ${nameOf(v)} | ${cs.map((c) => fmt(c.rps)).join(", ")} | ${fmt(median(cs.map((c) => c.rps)))} | ${fmt(median(cs.map((c) => c.p50_ms)), 2)} / ${fmt(median(cs.map((c) => c.p99_ms)), 2)} | ${fmt(median(cs.map(cpuUs)))} | ${failed} |`,
      );
    }
    if (variants.includes("before") && variants.includes("off")) {
      const v = verdict(cells, proto, "off", "before");
      verdicts.push(
        `- **${proto} Mute: ${v.word}.** This tree against ${label}, median of the per-round ratios: ${fmt(v.cpuRatio, 3)}× the CPU time per call (rounds ${v.cpu.map((x) => fmt(x, 3)).join(", ")}); ${fmt(v.rpsRatio, 3)}× the req/s (rounds ${v.rps.map((x) => fmt(x, 3)).join(", ")}).`,
      );
    }
  }
  return `${measuredLine("ab", startedAt, "`bash bench/ab.sh` with `BENCH_AB_WRITE=1`")}

${env.BENCH_AB_ROUNDS} rounds; in each, JSON mute (wrk) then gRPC Mute (h2load) at ${env.BENCH_AB_C} concurrent requests
against every variant in turn (each round starting with the next variant), ${env.BENCH_WARMUP} s of warm-up and
${env.BENCH_SECONDS} s per cell; servers and Redis on one CPU, the load on the other. CPU µs per call: the server process's
user + system time over the cell ÷ its requests. Verdict, on the median of the per-round ratios of CPU time per
call (the figure a busy machine moves least): "slower" above 1.05× the earlier build's, "faster" below 0.95×, else
"unchanged"; the req/s ratios are beside it.

${verdicts.length > 0 ? verdicts.join("\n") : "- No earlier build was given (BENCH_AB_BEFORE): no verdict."}

| proto | variant | req/s (each round) | median req/s | p50 / p99 ms (median) | CPU µs/call (median) | failed |
| ----- | ------- | ------------------ | ------------ | --------------------- | -------------------- | ------ |
${rows.join("\n")}`;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const file = process.argv[2];
  if (file === undefined) {
    console.error("usage: node bench/report/ab.mjs <results.jsonl>");
    process.exit(2);
  }
  /** @type {Cell[]} */
  const cells = readFileSync(file, "utf8")
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
  writeSection("ab", render(cells));
}
