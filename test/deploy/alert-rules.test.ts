/**
 * deploy/monitoring/alerts.yaml, checked without a running Prometheus: promtool (Debian's
 * `prometheus` package, which `npm test` installs where it is missing) accepts the rules and
 * passes their unit tests (alerts.test.yaml); every alert has a severity, a runbook section of
 * docs/runbooks.md and a unit test that fires it; every runbook section has its alert; and every
 * series the rules read is one a real boardline exports, read from the real process's `/metrics`
 * (`node dist/src/main.js`, whose registry has the process metrics the in-process harness leaves
 * out; its `# HELP` lines list every family, even those still at 0).
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { ROOT } from "../harness/build-dist.js";
import { type MainProcess, startMainProcess } from "../harness/main-process.js";
import { deleteKeysWithPrefix, redisUrl, uniquePrefix } from "../harness/redis-url.js";

const MONITORING = join(ROOT, "deploy/monitoring");
const RUNBOOKS = "docs/runbooks.md";

interface Rule {
  readonly alert?: string;
  readonly record?: string;
  readonly expr: string;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
}

const rules: Rule[] = (
  parse(readFileSync(join(MONITORING, "alerts.yaml"), "utf8")) as { groups: { rules: Rule[] }[] }
).groups.flatMap((g) => g.rules);
const alerts = rules.filter((r) => r.alert !== undefined);
const alertNames = [...new Set(alerts.map((r) => r.alert as string))];

/** promtool's exit status and everything it printed, or a failure naming the package when it is missing. */
function promtool(...args: string[]): { status: number | null; output: string } {
  const run = spawnSync("promtool", args, { cwd: MONITORING, encoding: "utf8" });
  if (run.error !== undefined) throw new Error(`promtool: ${run.error.message} (apt-get install prometheus)`);
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

/** The `## ` headings of the runbooks, as GitHub anchors them (these are plain alert names). */
function runbookAnchors(): string[] {
  return readFileSync(join(ROOT, RUNBOOKS), "utf8")
    .split("\n")
    .filter((line) => line.startsWith("## "))
    .map((line) => line.slice(3).trim().toLowerCase());
}

const PROMQL_WORDS = new Set(["and", "or", "unless", "bool", "offset"]);

/**
 * The series names an expression reads: what is left of it once strings, label matchers, ranges,
 * grouping clauses and function calls are taken out.
 */
function seriesNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, "")
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ");
  return [...bare.matchAll(/(?<![\w.:])([a-zA-Z_:][\w:]*)(?![\w:])(?!\s*\()/g)]
    .map((m) => m[1] as string)
    .filter((word) => !PROMQL_WORDS.has(word));
}

describe("deploy/monitoring/alerts.yaml", () => {
  it("passes promtool check rules", () => {
    const { status, output } = promtool("check", "rules", "alerts.yaml");
    expect(status, output).toBe(0);
  });

  it("passes its unit tests (promtool test rules alerts.test.yaml)", () => {
    const { status, output } = promtool("test", "rules", "alerts.test.yaml");
    expect(status, output).toBe(0);
  });

  it("gives every alert a severity (page or ticket), a summary and a runbook section", () => {
    const anchors = runbookAnchors();
    for (const rule of alerts) {
      expect(["page", "ticket"], `${rule.alert}: severity`).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary, `${rule.alert}: summary`).toBeTruthy();
      expect(rule.annotations?.runbook_url, `${rule.alert}: runbook_url`).toBe(
        `${RUNBOOKS}#${(rule.alert as string).toLowerCase()}`,
      );
      expect(anchors, `${rule.alert}: a section in ${RUNBOOKS}`).toContain((rule.alert as string).toLowerCase());
    }
  });

  it("has an alert for every runbook section", () => {
    const lower = alertNames.map((name) => name.toLowerCase());
    for (const anchor of runbookAnchors()) expect(lower, `${RUNBOOKS}: section ${anchor}`).toContain(anchor);
  });

  it("has a unit test that fires every alert, and one for each severity it has", () => {
    const tests = (
      parse(readFileSync(join(MONITORING, "alerts.test.yaml"), "utf8")) as {
        tests: { alert_rule_test?: { alertname: string; exp_alerts: { exp_labels?: Record<string, string> }[] }[] }[];
      }
    ).tests.flatMap((t) => t.alert_rule_test ?? []);
    for (const rule of alerts) {
      const fired = tests.filter(
        (t) =>
          t.alertname === rule.alert &&
          t.exp_alerts.some(
            (a) =>
              a.exp_labels?.severity === rule.labels?.severity &&
              (rule.labels?.long_window === undefined || a.exp_labels?.long_window === rule.labels.long_window),
          ),
      );
      expect(
        fired.length,
        `${rule.alert} (${JSON.stringify(rule.labels)}): a unit test where it fires`,
      ).toBeGreaterThan(0);
    }
  });
});

describe("the series the rules read", () => {
  const prefix = uniquePrefix("alert-rules");
  let main: MainProcess | undefined;
  beforeAll(async () => {
    main = await startMainProcess({
      NODE_ENV: "production",
      REDIS_URL: redisUrl(),
      REDIS_KEY_PREFIX: prefix,
      JWT_SECRET: "alert-rules-test-secret-of-at-least-32-bytes",
      CONVERSION_API_BASE: "http://127.0.0.1:9",
    });
  });
  afterAll(async () => {
    main?.proc.kill("SIGKILL");
    await deleteKeysWithPrefix(redisUrl(), prefix);
  });

  it("are all exported by boardline (or recorded by the rules, or Prometheus's own up)", async () => {
    const text = await (await fetch(`${main?.metricsUrl}/metrics`)).text();
    const families = [...text.matchAll(/^# HELP (\S+) /gm)].map((m) => m[1] as string);
    const histograms = new Set([...text.matchAll(/^# TYPE (\S+) histogram$/gm)].map((m) => m[1] as string));
    const exported = new Set(
      families.flatMap((name) => (histograms.has(name) ? [`${name}_bucket`, `${name}_count`, `${name}_sum`] : [name])),
    );
    // The parser must find the series a rule plainly names, or the check below proves nothing.
    expect(seriesNames('sum by (job) (rate(boardline_calls_total{code="503"}[5m])) > 0 and up == 0')).toEqual([
      "boardline_calls_total",
      "up",
    ]);
    const recorded = new Set(rules.flatMap((r) => (r.record === undefined ? [] : [r.record])));
    const read = new Set(rules.flatMap((r) => seriesNames(r.expr)));
    const unknown = [...read].filter((name) => !exported.has(name) && !recorded.has(name) && name !== "up");
    expect(unknown).toEqual([]);
    expect(read.size).toBeGreaterThan(10);
  });
});
