/**
 * A measuring instrument for bench/watchers.mjs and bench/pstn-watchers.mjs,
 * preloaded (`node --expose-gc -r ./bench/gc-probe.cjs dist/src/main.js`) into
 * those scenarios' boardline only: on SIGUSR2 it runs two full garbage collections and writes
 * `process.memoryUsage()` as JSON to $BENCH_GC_PROBE_OUT, so the live heap per
 * watcher can be read apart from garbage not yet collected. It changes nothing else.
 */
const { renameSync, writeFileSync } = require("node:fs");

const out = process.env.BENCH_GC_PROBE_OUT;
if (out && typeof global.gc === "function") {
  process.on("SIGUSR2", () => {
    global.gc();
    global.gc();
    writeFileSync(`${out}.tmp`, JSON.stringify(process.memoryUsage()));
    renameSync(`${out}.tmp`, out);
  });
}
