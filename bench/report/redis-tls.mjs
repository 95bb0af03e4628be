/**
 * The mute section's comparison of Redis over TLS with plain TCP: boardline and boardline-tls, two
 * instances alike but for how they reach the same redis-server (its port, or its tls-port), their
 * mute cells run next to each other in one run. Rendered for bench/report/requests.mjs.
 */

const f = (n, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");
const table = (header, body) =>
  [
    `| ${header.join(" | ")} |`,
    `|${header.map(() => "---").join("|")}|`,
    ...body.map((r) => `| ${r.join(" | ")} |`),
  ].join("\n");
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0
    ? Number.NaN
    : s.length % 2 === 1
      ? s[(s.length - 1) / 2]
      : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/**
 * @param {any[]} cells every request cell of the run (bench/lib/collect.mjs's lines)
 * @param {(r: any, key?: string) => number} cpuPerResponse a process's CPU µs per response of a cell
 * @returns {string} the subsection's markdown
 */
export function redisTlsSection(cells, cpuPerResponse) {
  const of = (target, proto, c) =>
    cells.filter((r) => r.target === target && r.route === "mute" && r.proto === proto && r.c === c);
  const rows = [];
  for (const proto of ["JSON", "gRPC"]) {
    const tlsCells = cells.filter((r) => r.target === "boardline-tls" && r.route === "mute" && r.proto === proto);
    for (const c of [...new Set(tlsCells.map((r) => r.c))].sort((a, b) => a - b)) {
      const plain = of("boardline", proto, c);
      const tls = of("boardline-tls", proto, c);
      if (plain.length === 0 || tls.length === 0) continue;
      /** The median over a server's runs of this cell. */
      const m = (runs, value) => median(runs.map(value));
      const rps = [m(plain, (r) => r.rps), m(tls, (r) => r.rps)];
      const p99 = [m(plain, (r) => r.p99_ms), m(tls, (r) => r.p99_ms)];
      const cpu = [m(plain, (r) => cpuPerResponse(r)), m(tls, (r) => cpuPerResponse(r))];
      const redisCpu = [
        m(plain, (r) => cpuPerResponse(r, "redis_cpu_ticks")),
        m(tls, (r) => cpuPerResponse(r, "redis_cpu_ticks")),
      ];
      rows.push([
        proto,
        c,
        Math.min(plain.length, tls.length),
        `${f(rps[0])} / ${f(rps[1])}`,
        `${f(rps[1] / rps[0], 2)}×`,
        `${f(
          m(plain, (r) => r.p50_ms),
          2,
        )} / ${f(
          m(tls, (r) => r.p50_ms),
          2,
        )}`,
        `${f(p99[0], 2)} / ${f(p99[1], 2)}`,
        `${f(cpu[0])} / ${f(cpu[1])} (${f(cpu[1] - cpu[0], 0)})`,
        `${f(redisCpu[0])} / ${f(redisCpu[1])} (${f(redisCpu[1] - redisCpu[0], 0)})`,
        [...plain, ...tls].reduce((n, r) => n + r.non2xx + r.errors, 0),
      ]);
    }
  }
  if (rows.length === 0) return "### Redis over TLS\n\nNot run (the mute mode and the full run measure it).";
  return `### Redis over TLS

What TLS between boardline and Redis costs a mute: boardline against boardline-tls, two instances alike
(the passphrase read cache on, as deployed) but that boardline-tls reaches the same redis-server over TLS
(its tls-port; \`rediss://\`, \`REDIS_TLS_CA\`, a 2048-bit RSA certificate; what it negotiates is under
"Checked before measuring") and boardline over plain TCP. Their cells run next to each other, in this
run; with more than one run (c16) each figure is the median of the runs. The machine is shared: read the two
sides of one row against each other, and believe CPU per response over req/s when they disagree. No target:
a figure to know, and to compare between runs.

${table(
  [
    "protocol",
    "c",
    "runs",
    "req/s plain / TLS",
    "TLS ÷ plain",
    "p50 ms plain / TLS",
    "p99 ms plain / TLS",
    "boardline CPU µs / response plain / TLS (TLS's extra)",
    "Redis CPU µs / response plain / TLS (TLS's extra)",
    "errors",
  ],
  rows,
)}`;
}
