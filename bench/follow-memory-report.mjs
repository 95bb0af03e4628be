/**
 * bench/follow-memory.mjs's figures as the Markdown of its section of
 * bench/RESULTS.md: one row per build and number of tasks followed, the bytes
 * per task against the same build's case of fewest tasks, and the kinds of heap
 * objects that grew the most between those two cases' snapshots.
 */
const mb = (bytes) => (bytes / 1024 / 1024).toFixed(1);
const kbMb = (kb) => (kb / 1024).toFixed(0);
/** `bytes` over the window's polls, in KB; "—" without polls. */
const perPoll = (r, bytes) => (r.pollsPerS > 0 ? (bytes / 1024 / (r.pollsPerS * r.windowS)).toFixed(1) : "—");

/** Per build, its rows against its own case of fewest tasks: bytes per task of the live heap and of the peaks. */
function perTask(results, builds) {
  const lines = [];
  for (const build of builds) {
    const own = results.filter((r) => r.build === build).sort((a, b) => a.tasks - b.tasks);
    const base = own[0];
    if (base === undefined) continue;
    for (const r of own.slice(1)) {
      const n = r.tasks - base.tasks;
      const per = (x) => (n > 0 ? (x / n).toFixed(0) : "—");
      lines.push(
        `| ${build} | ${base.tasks} → ${r.tasks} | ${per(r.usage.heapUsed - base.usage.heapUsed)} | ` +
          `${per(r.usage.external - base.usage.external)} | ${per((r.followPeakKb - base.followPeakKb) * 1024)} | ` +
          `${per((r.createPeakKb - base.createPeakKb) * 1024)} |`,
      );
    }
  }
  return lines;
}

export function memoryReport({ results, diffs, builds, stall, machine, load, windowS, node }) {
  const when = new Date().toISOString().slice(0, 16).replace("T", " ");
  const out = [
    `### Issue 24, part 4: bench/follow-memory.mjs — ${when} UTC`,
    "",
    `\`node bench/follow-memory.mjs\`: ${machine}; Node ${node} with package.json's nodeFlags; load average ` +
      `${load[0].map((x) => x.toFixed(2)).join(" ")} at the start, ${load[1].map((x) => x.toFixed(2)).join(" ")} at the end; ` +
      `stall probe (bench/stall.mjs, before the cases): ${stall.stalled_pct.toFixed(1)} % of 5 s stalled, ` +
      `${stall.gaps_over_2ms} gaps > 2 ms, longest ${stall.max_gap_ms.toFixed(1)} ms. Each case: its own Redis, simulator and one boardline; the tasks made by ConvertFile ` +
      `(64 at a time), then a ${windowS} s window of steady following (every task polled every 5 s). Peaks are VmHWM, ` +
      "reset (`clear_refs 5`) before the creation and before the window; the live heap is `heapUsed` after two full GCs " +
      "(bench/gc-probe.cjs), with the heap as the window left it in brackets. Allocated and promoted bytes, GCs and the " +
      "young generation's capacity (one semi-space) are V8's own account over the window (`--trace-gc-nvp`).",
    "",
    "| build | tasks | polls/s | peak RSS MB: creating / following | live heap MB (before the GCs) | heap committed MB (before the GCs) | external / array buffers MB | KB per poll: allocated / promoted | scavenges, mark-compacts per s | young generation MB |",
    "| ----- | ----: | ------: | --------------------------------- | ----------------------------- | ---------------------------------- | --------------------------- | --------------------------------- | ------------------------------ | ------------------: |",
  ];
  for (const r of results) {
    const u = r.usage;
    out.push(
      `| ${r.build} | ${r.tasks} | ${r.pollsPerS.toFixed(0)} | ${kbMb(r.createPeakKb)} / ${kbMb(r.followPeakKb)} | ` +
        `${mb(u.heapUsed)} (${mb(u.beforeGc.heapUsed)}) | ${mb(u.heapTotal)} (${mb(u.beforeGc.heapTotal)}) | ` +
        `${mb(u.external)} / ${mb(u.arrayBuffers)} | ${perPoll(r, r.gc.allocated)} / ${perPoll(r, r.gc.promoted)} | ` +
        `${(r.gc.scavenges / windowS).toFixed(1)}, ${(r.gc.markCompacts / windowS).toFixed(2)} | ${mb(r.gc.newSpaceMax)} |`,
    );
  }
  out.push(
    "",
    "Bytes per task followed, against the same build's case of fewest tasks:",
    "",
    "| build | tasks | live heap | external | peak RSS following | peak RSS creating |",
    "| ----- | ----- | --------: | -------: | -----------------: | ----------------: |",
    ...perTask(results, builds),
  );
  for (const d of diffs) {
    out.push(
      "",
      `Heap snapshot, ${d.build}: ${d.from} → ${d.to} tasks, ${(d.totalKb[0] / 1024).toFixed(1)} → ` +
        `${(d.totalKb[1] / 1024).toFixed(1)} MB of live objects; the kinds that grew the most (self size, count):`,
      "",
      ...d.rows.map((r) => `- ${(r.bytes / 1024).toFixed(0)} KiB, ${r.count} × \`${r.kind}\``),
    );
  }
  return out.join("\n");
}
