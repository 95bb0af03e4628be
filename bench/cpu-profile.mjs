/**
 * Reads a V8 CPU profile (`node --cpu-prof`'s .cpuprofile) as the bench asks of it: self time per
 * function, and per package — boardline's own src (and generated gen/), each npm package by name (ioredis,
 * @bufbuild/protovalidate, prom-client, @connectrpc/…), Node's own JavaScript (`node:` modules), and what
 * has no script: V8 builtins and native code, GC, idle. Used by bench/mute-profile.mjs; also
 *
 *   node bench/cpu-profile.mjs <file.cpuprofile> [top=25] [calls]
 *
 * prints the same summary for a whole profile (`calls`: µs per call are added when given).
 */
import { readFileSync } from "node:fs";

/** Where a function's code comes from. */
export function packageOf(callFrame) {
  const { url, functionName } = callFrame;
  if (url === "") {
    if (functionName === "(garbage collector)") return "(GC)";
    if (functionName === "(idle)") return "(idle)";
    if (functionName === "(program)") return "(program: native, outside JS)";
    return "(V8 builtins / native)";
  }
  if (url.startsWith("node:")) return "node internals";
  const nm = url.lastIndexOf("/node_modules/");
  if (nm !== -1) {
    const parts = url.slice(nm + "/node_modules/".length).split("/");
    return parts[0]?.startsWith("@") ? `${parts[0]}/${parts[1]}` : (parts[0] ?? url);
  }
  if (url.includes("/dist/gen/")) return "boardline gen/";
  if (url.includes("/dist/src/")) return "boardline src/";
  if (url.includes("/bench/")) return "bench/";
  return url;
}

/**
 * Self time (µs) per profile node id, from the samples and their time deltas; with `window` ([from, to],
 * µs of the monotonic clock — `process.hrtime.bigint() / 1000n`, the clock V8 stamps profiles with), only
 * the samples taken within it (the measured load, not the start-up or the shutdown around it).
 */
function selfTimes(profile, window) {
  const self = new Map();
  const { samples = [], timeDeltas = [] } = profile;
  const [from, to] = window ?? [Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY];
  let at = profile.startTime;
  for (let i = 0; i < samples.length; i++) {
    // A sample's delta is the time since the previous one; it is charged to the sample's node.
    at += timeDeltas[i] ?? 0;
    if (at < from || at > to) continue;
    self.set(samples[i], (self.get(samples[i]) ?? 0) + (timeDeltas[i] ?? 0));
  }
  return self;
}

/**
 * Tables (Markdown) of self time by package and of the `top` functions; µs per call when `calls` is
 * given; only the samples within `window` when given (see `selfTimes`).
 */
export function summarizeProfile(profile, { top = 25, calls, window } = {}) {
  const self = selfTimes(profile, window);
  const byPackage = new Map();
  const byFunction = new Map();
  let busy = 0;
  for (const node of profile.nodes) {
    const us = self.get(node.id) ?? 0;
    if (us === 0) continue;
    const pkg = packageOf(node.callFrame);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us);
    if (pkg === "(idle)") continue;
    busy += us;
    const { functionName, url, lineNumber } = node.callFrame;
    const file = url.replace(/^.*\/(node_modules|dist)\//, "").replace(/^file:\/\//, "");
    const key = `${functionName || "(anonymous)"} ${file}${url ? `:${lineNumber + 1}` : ""}`;
    const f = byFunction.get(key) ?? { key, pkg, us: 0 };
    f.us += us;
    byFunction.set(key, f);
  }
  const perCall = (us) => (calls ? ` | ${(us / calls).toFixed(1)}` : "");
  const head = calls ? " | µs/call" : "";
  const sep = calls ? " | ---" : "";
  const pct = (us) => ((100 * us) / busy).toFixed(1);
  const packages = [...byPackage]
    .filter(([pkg]) => pkg !== "(idle)")
    .sort((a, b) => b[1] - a[1])
    .map(([pkg, us]) => `| ${pkg} | ${pct(us)} %${perCall(us)} |`);
  const functions = [...byFunction.values()]
    .sort((a, b) => b.us - a.us)
    .slice(0, top)
    .map((f) => `| ${f.key.replace(/\|/g, "\\|")} | ${f.pkg} | ${pct(f.us)} %${perCall(f.us)} |`);
  const idle = byPackage.get("(idle)") ?? 0;
  return [
    `Busy ${(busy / 1e6).toFixed(2)} s of ${((busy + idle) / 1e6).toFixed(2)} s sampled (idle ${((100 * idle) / (busy + idle)).toFixed(1)} %); shares of the busy time.`,
    "",
    `| package | self time${head} |`,
    `| --- | ---${sep} |`,
    ...packages,
    "",
    `| function (top ${top} by self time) | package | self time${head} |`,
    `| --- | --- | ---${sep} |`,
    ...functions,
  ].join("\n");
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [file, top = "25", calls] = process.argv.slice(2);
  if (file === undefined) {
    console.error("usage: node bench/cpu-profile.mjs <file.cpuprofile> [top] [calls]");
    process.exit(2);
  }
  const options = { top: Number(top), ...(calls === undefined ? {} : { calls: Number(calls) }) };
  console.log(summarizeProfile(JSON.parse(readFileSync(file, "utf8")), options));
}
