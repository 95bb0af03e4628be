/**
 * A measuring instrument for bench/scenarios/conversion-watchers.mjs, bench/scenarios/pstn-watchers.mjs and
 * bench/follow-memory.mjs, preloaded (`node --expose-gc -r ./bench/lib/gc-probe.cjs
 * dist/src/main.js`) into those scenarios' boardline only: on SIGUSR2 it runs two
 * full garbage collections and writes `process.memoryUsage()` as JSON to
 * $BENCH_GC_PROBE_OUT, so the live heap can be read apart from garbage not yet
 * collected (and, as `beforeGc`, the figures as they were when the signal came). With $BENCH_GC_PROBE_SNAPSHOT it also writes a heap snapshot there
 * (after reading the figures, before writing them out: once the JSON is there,
 * so is the snapshot). `spaces` is V8's heap spaces as the signal found them: the memory each
 * holds (physical) and uses, in bytes. It changes nothing else.
 */
const { renameSync, writeFileSync } = require("node:fs");
const { getHeapSpaceStatistics, writeHeapSnapshot } = require("node:v8");

const out = process.env.BENCH_GC_PROBE_OUT;
const snapshot = process.env.BENCH_GC_PROBE_SNAPSHOT;
if (out && typeof global.gc === "function") {
  process.on("SIGUSR2", () => {
    const beforeGc = process.memoryUsage();
    const spaces = getHeapSpaceStatistics().map((s) => ({
      name: s.space_name,
      physical: s.physical_space_size,
      used: s.space_used_size,
    }));
    const gc = /** @type {() => void} */ (global.gc);
    gc();
    gc();
    const usage = process.memoryUsage();
    if (snapshot) {
      writeHeapSnapshot(`${snapshot}.tmp`);
      renameSync(`${snapshot}.tmp`, snapshot);
    }
    writeFileSync(`${out}.tmp`, JSON.stringify({ ...usage, beforeGc, spaces }));
    renameSync(`${out}.tmp`, out);
  });
}
