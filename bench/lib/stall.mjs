/**
 * How often this machine takes the CPU away from a process that wants it —
 * the part of a p99 no server code can remove. A busy loop reads the clock
 * and records every gap between two readings longer than 0.5 ms: time the
 * loop did not run (the hypervisor ran someone else, or the kernel did).
 *
 *   node bench/lib/stall.mjs measure SECONDS   prints one JSON line
 *   node bench/lib/stall.mjs spin SECONDS      only keeps a CPU busy
 *
 * run.sh pins `measure` to the servers' CPU and `spin` to the load
 * generator's, so both CPUs are busy as they are during a cell. On the
 * machines seen here, a CPU stalls far more often when the other one is busy.
 */
const [mode = "measure", secondsArg = "5"] = process.argv.slice(2);
const seconds = Number(secondsArg);
if (!(seconds > 0) || (mode !== "measure" && mode !== "spin")) {
  console.error("usage: node bench/lib/stall.mjs measure|spin SECONDS");
  process.exit(2);
}

const end = performance.now() + seconds * 1000;
/** @type {number[]} */
const gaps = [];
let last = performance.now();
for (;;) {
  const now = performance.now();
  if (now >= end) break;
  if (now - last > 0.5) gaps.push(now - last);
  last = now;
}

if (mode === "measure") {
  const stalled = gaps.reduce((a, b) => a + b, 0);
  const over = (/** @type {number} */ ms) => gaps.filter((g) => g > ms).length;
  console.log(
    JSON.stringify({
      seconds,
      stalled_pct: (100 * stalled) / (seconds * 1000),
      gaps_over_1ms: over(1),
      gaps_over_2ms: over(2),
      gaps_over_5ms: over(5),
      max_gap_ms: gaps.length === 0 ? 0 : Math.max(...gaps),
    }),
  );
}
