/**
 * The conversions section of docs/performance.md: GetConversion beside mute (cells of the same run),
 * and the WatchConversion streams (bench/scenarios/conversion-watchers.mjs's watchers.json). Rendered
 * for bench/report/requests.mjs.
 */

const f = (n, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");
const mb = (kb) => f(kb / 1024, 0);
const table = (header, body) =>
  [
    `| ${header.join(" | ")} |`,
    `|${header.map(() => "---").join("|")}|`,
    ...body.map((r) => `| ${r.join(" | ")} |`),
  ].join("\n");
const ms = (s) => `${f(s.p50)} / ${f(s.p99)} / ${f(s.max)}`;

/** GetConversion's cells beside boardline's mute cells of the same run (first runs only). */
function besideMute(cells, cpuPerResponse) {
  const first = cells.filter((r) => (r.run ?? 1) === 1 && r.target === "boardline");
  const rows = [];
  for (const proto of ["JSON", "gRPC"]) {
    for (const get of first.filter((r) => r.route === "get" && r.proto === proto).sort((a, b) => a.c - b.c)) {
      const mute = first.find((r) => r.route === "mute" && r.proto === proto && r.c === get.c);
      const cpu = (r, key) => (r === undefined ? Number.NaN : cpuPerResponse(r, key));
      rows.push([
        proto,
        get.c,
        f(mute?.rps),
        f(get.rps),
        mute ? `${f(get.rps / mute.rps, 2)}×` : "n/a",
        `${f(cpu(mute))} / ${f(cpu(get))}`,
        `${f(cpu(mute, "redis_cpu_ticks"))} / ${f(cpu(get, "redis_cpu_ticks"))}`,
        `${f(mute?.p99_ms, 2)} / ${f(get.p99_ms, 2)}`,
        get.non2xx + get.errors,
      ]);
    }
  }
  if (rows.length === 0) return "GetConversion: not run.";
  return `### GetConversion beside mute

The same boardline instance, cells of this run (the machine is shared, so compare within a row, not with
other runs). GetConversion reads one Finished task's record (3 pages) with \`HGETALL\`; Mute runs a Lua script
(the passphrase read cache on, as deployed). JSON: \`GET /v1/whiteboard/fileconvert/{task_uuid}\` with wrk;
gRPC: unary \`GetConversion\` through the fast path with h2load.

${table(
  [
    "protocol",
    "c",
    "Mute req/s",
    "GetConversion req/s",
    "Get ÷ Mute",
    "boardline CPU µs / call (Mute / Get)",
    "Redis CPU µs / call (Mute / Get)",
    "p99 ms (Mute / Get)",
    "errors",
  ],
  rows,
)}`;
}

function memoryPart(w, first) {
  if (first.hold === undefined) return "Memory: not measured.";
  const m = first.hold.mem;
  const half = w.watchers / 2;
  const per = (a, b, n) => `${f((b.rss - a.rss) / n, 1)} KB / ${f((b.heapUsed - a.heapUsed) / n, 1)} KB`;
  const row = (label, x, perWatcher) => [label, mb(x.rss), f(x.heapUsed / 1024, 1), perWatcher];
  return table(
    [
      `boardline ("${first.setting}"), watchers of one slow task`,
      "RSS MB",
      "live heap MB",
      "per watcher: RSS / live heap",
    ],
    [
      row("before (after a warm-up round of 40 watchers)", m.before, ""),
      row(`with ${half} SSE watchers (HTTP/1.1)`, m.withSse, per(m.before, m.withSse, half)),
      row(`with ${half} more gRPC watchers (HTTP/2)`, m.withAll, per(m.withSse, m.withAll, half)),
      [`all ${w.watchers}`, "", "", per(m.before, m.withAll, w.watchers)],
      row("once they had all disconnected", m.afterLeaving, ""),
      [`peak (VmHWM) over the whole "${first.setting}" scenario`, mb(first.rssPeakKb), "", ""],
    ],
  );
}

function delayRows(label, r) {
  return [
    [`${label}: simulator end → last watcher`, ms(r.totalMs)],
    ["… end → Finished saved (follower: its tick, the query, the save)", ms(r.followerMs)],
    ["… saved → first watcher (watch hub read, write)", ms(r.hubMs)],
    ["… first → last watcher (fan-out)", ms(r.fanOutMs)],
    ["… end → last SSE watcher / last gRPC watcher (p50)", `${f(r.sseLastMs.p50)} / ${f(r.grpcLastMs.p50)}`],
  ];
}

function settingPart(w, s) {
  const r = s.rounds;
  const poll =
    Object.keys(s.pollEnv).length === 0
      ? "documented defaults (first poll 1.5 s, then half the task's age, at most 5 s)"
      : Object.entries(s.pollEnv)
          .map(([k, v]) => `${k}=${v}`)
          .join(", ");
  const rows = delayRows(`${w.tasksPerRound} tasks × ${w.watchers / w.tasksPerRound} watchers`, r);
  if (s.oneTask) rows.push(...delayRows(`1 task × ${w.watchers} watchers`, s.oneTask));
  const notes = [
    `${r.valid} of ${r.tasks} tasks measured${r.late > 0 ? ` (${r.late} left out: a watcher attached after the end)` : ""}${s.oneTask ? `, plus ${s.oneTask.valid} of ${s.oneTask.tasks} one-task rounds` : ""}`,
    `${w.watchers} watchers attached in ${f(r.attachMs.p50)} ms (median over rounds); the first task ended ${f(r.firstEndAfterAttachMs)} ms after the last attach at the least`,
    `Redis record reads (\`hgetall\`, hub + follower) while the ${w.tasksPerRound} tasks were watched: ${f(r.hgetallPerSecond)}/s`,
    ...[
      [`${w.tasksPerRound}-task rounds`, r],
      ["one-task rounds", s.oneTask],
    ]
      .filter(([, x]) => x !== undefined)
      .map(([label, x]) =>
        x.errors.length === 0 && x.timedOut === 0 && x.missing === 0
          ? `${label}: every watcher received every state and the end; no errors`
          : `${label}: **errors** ${JSON.stringify(x.errors)}; rounds timed out: ${x.timedOut}; watchers without Finished: ${x.missing}`,
      ),
  ];
  return `#### Poll setting "${s.setting}": ${poll}

${table(["delay, ms", "p50 / p99 / max over tasks"], rows)}

${notes.map((n) => `- ${n}`).join("\n")}`;
}

function watchersPart(w) {
  const first = w.settings[0];
  const a = first.hold;
  const sessions = Math.ceil(w.watchers / 2 / 200);
  // CLIENT LIST counts every boardline process's connection; the ones there before this instance started are the bench's others.
  const own = (s, x) => x.boardline - s.redisBefore.boardline;
  const leak =
    a === undefined
      ? "not run"
      : `${a.attachedFirst} watchers of the slow task${Object.keys(a.errorsFirst).length > 0 ? ` (**not attached: ${JSON.stringify(a.errorsFirst)}**)` : ""} disconnected at once: boardline's open descriptors ${a.fdsBefore} → ${a.fdsDuring} → ${a.fdsAfter} (back within ${f(a.releaseMs)} ms); attached again at once with MAX_WATCHES = ${w.watchers}: ${a.attachedAgain} of ${w.watchers}${Object.keys(a.errorsAgain).length > 0 ? ` — **refused: ${JSON.stringify(a.errorsAgain)}**` : " (no watch slot was left behind)"}`;
  return `### WatchConversion streams on one instance

bench/scenarios/conversion-watchers.mjs: a boardline of its own per poll setting (same build, flags and Redis; MAX_WATCHES = ${w.watchers}),
${w.watchers / 2} watchers as server-sent events over HTTP/1.1 (\`GET …/watch\`, one socket each) and ${w.watchers / 2} as
gRPC server streams (@connectrpc/connect-node) over ${sessions} HTTP/2 connections; a simulator of its own whose
tasks finish ${f((4 * w.progressMs) / 1000, 1)} s after creation (4 steps of ${w.progressMs} ms). Per round ${w.tasksPerRound}
tasks are created ${w.staggerMs} ms apart, then the watchers attach (a task one of whose watchers attached after
its end is left out of the delays); memory is measured on a slow task that changes nothing meanwhile. "End" is the simulator's own
schedule (\`SimulatedTask.endsAt\`: the first instant a query answers Finished); "saved" is the Finished
record's \`updated_at\`; receive times are taken in the watchers' process. RSS is VmRSS (median of 5 readings);
the live heap is \`heapUsed\` right after two full GCs (the instance runs with \`--expose-gc -r bench/lib/gc-probe.cjs\`,
which collects on SIGUSR2 and nothing else). Whole scenario ${f(w.elapsedMs / 1000)} s.

${memoryPart(w, first)}

- Redis connections of the instance (CLIENT LIST, named \`boardline\`, less the ${w.settings[0].redisBefore.boardline} of the bench's other instances): ${w.settings.map((s) => `"${s.setting}": ${own(s, s.redisIdle)} idle, ${own(s, s.redisDuring)} with ${w.watchers} watchers of 20 tasks${s.hold ? `, ${own(s, s.hold.redisDuring)} with ${w.watchers} of one task` : ""}, ${own(s, s.redisAfter)} after`).join("; ")}
- Disconnects: ${leak}

${w.settings.map((s) => settingPart(w, s)).join("\n\n")}`;
}

export function conversionsSection(cells, watchers, cpuPerResponse) {
  const parts = [besideMute(cells, cpuPerResponse)];
  if (watchers !== undefined) parts.push(watchersPart(watchers));
  return parts.join("\n\n");
}
