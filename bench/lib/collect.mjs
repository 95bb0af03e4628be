/**
 * Turns one cell's raw load-generator output into one JSON line (stdout):
 *
 *   node bench/lib/collect.mjs wrk <wrk summary.json> key=value…
 *   node bench/lib/collect.mjs h2load <h2load stdout> <h2load --log-file> key=value…
 *
 * wrk: requests/s = requests ÷ duration; percentiles from wrk's own latency
 * histogram (what `--latency` prints). h2load prints no percentiles, so they
 * are computed here from its per-request log (third column: µs from the
 * request's start to the end of its response; nearest-rank percentiles);
 * requests/s is h2load's own figure.
 * key=value pairs (target, route, proto, c, rss_kb, writes, …) are copied in;
 * numeric values become numbers.
 */
import { readFileSync } from "node:fs";

const [tool, ...rest] = process.argv.slice(2);
const files = tool === "h2load" ? rest.splice(0, 2) : rest.splice(0, 1);
const [first = "", second = ""] = files;
const meta = Object.fromEntries(
  rest.map((kv) => {
    const i = kv.indexOf("=");
    const value = kv.slice(i + 1);
    return [kv.slice(0, i), value !== "" && Number.isFinite(Number(value)) ? Number(value) : value];
  }),
);

/**
 * @param {number[]} sorted
 * @param {number} p
 */
function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? Number.NaN;
}

let cell;
if (tool === "wrk") {
  const s = JSON.parse(readFileSync(first, "utf8"));
  const errors = s.errors.connect + s.errors.read + s.errors.write + s.errors.timeout;
  cell = {
    tool,
    requests: s.requests,
    rps: s.requests / (s.duration_us / 1e6),
    p50_ms: s.latency_us.p50 / 1000,
    p99_ms: s.latency_us.p99 / 1000,
    max_ms: s.latency_us.max / 1000,
    // wrk counts responses with status > 399 as errors.status.
    non2xx: s.errors.status,
    errors,
    error_detail: s.errors,
  };
} else if (tool === "h2load") {
  const out = readFileSync(first, "utf8");
  const num = (/** @type {RegExp} */ re) => {
    const m = re.exec(out);
    if (m === null) throw new Error(`h2load output lacks ${re}:\n${out}`);
    return Number(m[1]);
  };
  const durations = [];
  let non200 = 0;
  for (const line of readFileSync(second, "utf8").split("\n")) {
    const cols = line.split("\t");
    if (cols.length < 3) continue;
    if (cols[1] !== "200") non200 += 1;
    durations.push(Number(cols[2]));
  }
  durations.sort((a, b) => a - b);
  cell = {
    tool,
    requests: num(/requests: \d+ total, \d+ started, (\d+) done/),
    succeeded: num(/(\d+) succeeded/),
    rps: num(/finished in [\d.]+m?s, ([\d.]+) req\/s/),
    p50_ms: percentile(durations, 50) / 1000,
    p99_ms: percentile(durations, 99) / 1000,
    max_ms: (durations.at(-1) ?? Number.NaN) / 1000,
    logged: durations.length,
    // HTTP status only: a gRPC error still travels in a 200 (see the grpc-status checks).
    non2xx: non200,
    failed: num(/(\d+) failed/),
    errors: num(/(\d+) errored/) + num(/(\d+) timeout/),
  };
} else {
  console.error("usage: collect.mjs wrk|h2load …");
  process.exit(2);
}
console.log(JSON.stringify({ ...meta, ...cell }));
