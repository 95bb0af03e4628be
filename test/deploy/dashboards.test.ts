/**
 * deploy/monitoring/dashboards/: the committed JSON is what tools/dashboards.ts builds, and every
 * series its panels query is one a running boardline exports (scraped from a real server on Redis,
 * with prom-client's process and Node.js series as the real process has them), so a renamed
 * metric fails here rather than as an empty panel. The tokenizer that reads the names out of the
 * PromQL is tested on its own, and the check is shown to fail on a made-up name.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DATASOURCE_UID, OVERVIEW_JSON, overviewDashboard, renderDashboard, SLO_RPCS } from "../../tools/dashboards.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { ROOT } from "../harness/build-dist.js";
import { scrape } from "../harness/metrics-scrape.js";
import { type DashboardJson, exportedNames, panelQueries, seriesNames, unexported } from "./promql.js";

describe("the PromQL tokenizer", () => {
  it("finds the series and nothing else: not functions, aggregations, label names or values, durations, variables", () => {
    expect(
      seriesNames(
        'histogram_quantile(0.99, sum by (rpc, le) (rate(boardline_call_duration_seconds_bucket{code=~"5.."}[$__rate_interval])))',
      ),
    ).toEqual(["boardline_call_duration_seconds_bucket"]);
    expect(
      seriesNames(
        'sum(rate(a_total{rpc="Mute", x="sum by (b)"}[1h])) by (rpc) / on (rpc) group_left (code) sum without (le) (b) > bool 0.5 offset 5m',
      ),
    ).toEqual(["a_total", "b"]);
    expect(seriesNames("max(c) and d or e unless f_bucket")).toEqual(["c", "d", "e", "f_bucket"]);
    expect(seriesNames('{__name__="g_total", job="x"} + count_values("v", h) + topk(3, i) + 1e3 + 0x1f + Inf')).toEqual(
      ["g_total", "h", "i"],
    );
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax inside PromQL
    expect(seriesNames("rate(j[${__range}]) # k is a comment\n+ l")).toEqual(["j", "l"]);
    expect(seriesNames('label_replace(m, "dst", "$1", "src", "(.*)")')).toEqual(["m"]);
  });

  it("refuses what it cannot read rather than guessing", () => {
    expect(() => seriesNames('a{b="c}')).toThrow(/unclosed/);
    expect(() => seriesNames("rate(a[5m)")).toThrow(/unclosed "\["/);
  });

  it("reads an exposition's names, with the series a histogram's family implies", () => {
    const text = [
      "# HELP h_seconds x",
      "# TYPE h_seconds histogram",
      "# HELP c_total y",
      "# TYPE c_total counter",
      'c_total{a="b"} 1',
      "g 2",
    ].join("\n");
    expect([...exportedNames(text)].sort()).toEqual([
      "c_total",
      "g",
      "h_seconds",
      "h_seconds_bucket",
      "h_seconds_count",
      "h_seconds_sum",
    ]);
  });
});

describe(`${OVERVIEW_JSON}`, () => {
  const text = renderDashboard(overviewDashboard());
  const dashboard = JSON.parse(text) as DashboardJson;
  let bl: Boardline;
  let exported: Set<string>;
  beforeAll(async () => {
    bl = await startBoardline({ store: "redis", collectDefaultMetrics: true });
    exported = exportedNames(await scrape(bl.url));
  });
  afterAll(async () => {
    await bl?.close();
  });

  it("is up to date (else: npm run dashboards)", () => {
    const committed = readFileSync(join(ROOT, OVERVIEW_JSON), "utf8");
    expect(committed, `${OVERVIEW_JSON} is stale: run npm run dashboards`).toBe(text);
  });

  it("queries only series that boardline exports", () => {
    const queries = panelQueries(dashboard);
    expect(queries.length).toBeGreaterThan(30);
    expect(exported.has("boardline_process_resident_memory_bytes")).toBe(true);
    expect(unexported(dashboard, exported)).toEqual([]);
  });

  it("fails on a query of a series boardline does not export", () => {
    const broken = JSON.parse(text) as { panels: { type: string; title: string; targets: { expr: string }[] }[] };
    const panel = broken.panels.find((p) => p.type === "timeseries");
    if (panel?.targets[0] === undefined) throw new Error("no time series panel with a query");
    panel.targets[0].expr = "sum(rate(boardline_calls_totals[5m])) / sum(boardline_made_up)";
    expect(unexported(broken, exported)).toEqual([
      `${panel.title}: boardline_calls_totals`,
      `${panel.title}: boardline_made_up`,
    ]);
  });

  it("gives every panel a query on the dashboard's datasource variable", () => {
    const panels = (dashboard.panels ?? []).filter((p) => p.type !== "row");
    const ids = (dashboard.panels ?? []).map((p) => p.id);
    expect(new Set(ids).size, "panel ids must be unique").toBe(ids.length);
    for (const p of panels) {
      expect(p.targets?.length ?? 0, p.title).toBeGreaterThan(0);
      expect(p.datasource?.uid, p.title).toBe(DATASOURCE_UID);
      for (const t of p.targets ?? []) expect(t.datasource?.uid, p.title).toBe(DATASOURCE_UID);
    }
    expect(dashboard.templating?.list?.map((v) => [v.name, v.type, v.query])).toEqual([
      ["datasource", "datasource", "prometheus"],
    ]);
  });

  it("shows the SLO RPCs' server-error ratio over 1 h and 5 m", () => {
    const exprs = panelQueries(dashboard).map((q) => q.expr);
    for (const window of ["1h", "5m"]) {
      const ratio = exprs.find((e) => e.includes(`code=~"500|503|504"}[${window}]`));
      expect(ratio, window).toContain(`rpc=~"${SLO_RPCS.join("|")}"`);
    }
  });
});
