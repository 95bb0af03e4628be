/**
 * tools/dashboard-preview/spec.ts, the part of `npm run dashboard:preview` that needs no live run:
 * every panel of the committed overview.json becomes a chart of its row with all of its queries,
 * Grafana's variables substituted, so a dashboard change the preview cannot draw (a new panel type,
 * a collapsed row, a variable it does not know) fails here rather than leaving the picture short.
 * The run itself (a live boardline, Prometheus, Chromium, ~1 minute) is not part of the suite.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { OVERVIEW_JSON } from "../../tools/dashboards.js";
import { legendName, PREVIEW_VARIABLES, previewSpec, substitute } from "../../tools/dashboard-preview/spec.js";
import { ROOT } from "../harness/build-dist.js";

interface RawPanel {
  id: number;
  type: string;
  title: string;
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: { expr: string }[];
  collapsed?: boolean;
  panels?: unknown[];
}

const overview = JSON.parse(readFileSync(join(ROOT, OVERVIEW_JSON), "utf8")) as { title: string; panels: RawPanel[] };
const spec = previewSpec(overview);
const drawn = spec.rows.flatMap((r) => r.panels);

describe("the overview dashboard as the preview draws it", () => {
  it("has every row, titled as the dashboard's, and every panel once, in its row", () => {
    const rows = overview.panels.filter((p) => p.type === "row");
    expect(spec.rows.map((r) => r.title)).toEqual(rows.map((r) => r.title));
    const panels = overview.panels.filter((p) => p.type !== "row");
    expect(drawn.map((p) => [p.id, p.title, p.gridPos])).toEqual(panels.map((p) => [p.id, p.title, p.gridPos]));
    spec.rows.forEach((row, i) => {
      const next = spec.rows[i + 1]?.gridPos.y ?? Number.POSITIVE_INFINITY;
      for (const p of row.panels) {
        expect(p.gridPos.y).toBeGreaterThan(row.gridPos.y);
        expect(p.gridPos.y).toBeLessThan(next);
      }
    });
  });

  it("runs each panel's every query, with Grafana's variables substituted and no `$` left", () => {
    for (const [p, raw] of drawn.map((p) => [p, overview.panels.find((r) => r.id === p.id)] as const)) {
      expect(p.queries.length, p.title).toBe(raw?.targets?.length);
      expect(p.queries.length, p.title).toBeGreaterThan(0);
      for (const q of p.queries) {
        expect(q.expr, p.title).not.toContain("$");
        expect(q.legend, p.title).not.toContain("$");
      }
    }
    const rated = drawn.flatMap((p) => p.queries).filter((q) => q.expr.includes("rate("));
    expect(rated.length).toBeGreaterThan(10);
    expect(rated.some((q) => q.expr.includes(`[${PREVIEW_VARIABLES.__rate_interval}]`))).toBe(true);
    expect(JSON.stringify(spec)).not.toContain("$");
  });

  it("knows how to draw every panel's unit", () => {
    // The page formats these (tools/dashboard-preview/page/chart.ts); another unit would show as a bare number.
    const known = ["reqps", "ops", "s", "bytes", "percentunit", "short", ""];
    for (const p of drawn) expect(known, `${p.title}: unit ${p.unit}`).toContain(p.unit);
  });
});

describe("what the preview refuses", () => {
  const row = { id: 1, type: "row", title: "R", gridPos: { x: 0, y: 0, w: 24, h: 1 }, panels: [] };
  const panel = (o: object) => ({
    id: 2,
    type: "timeseries",
    title: "P",
    gridPos: { x: 0, y: 1, w: 8, h: 8 },
    targets: [{ expr: "sum(rate(a_total[$__rate_interval]))", legendFormat: "{{rpc}}" }],
    ...o,
  });

  it("draws a plain row and panel", () => {
    expect(previewSpec({ title: "D", panels: [row, panel({})] }).rows[0]?.panels[0]?.queries).toEqual([
      { expr: "sum(rate(a_total[15s]))", legend: "{{rpc}}", instant: false },
    ]);
  });

  it("a panel type it does not draw, a collapsed row, a variable it does not know, a panel without queries", () => {
    expect(() => previewSpec({ panels: [row, panel({ type: "piechart" })] })).toThrow(/piechart is not drawn/);
    expect(() => previewSpec({ panels: [{ ...row, collapsed: true, panels: [panel({})] }] })).toThrow(/collapsed/);
    expect(() => previewSpec({ panels: [row, panel({ targets: [{ expr: 'up{job=~"$job"}' }] })] })).toThrow(
      /unknown dashboard variable \$job/,
    );
    expect(() => previewSpec({ panels: [row, panel({ targets: [] })] })).toThrow(/no queries/);
    expect(() => previewSpec({ panels: [panel({})] })).toThrow(/before the first row/);
  });

  it("substitutes each of Grafana's spellings, and leaves a regular expression's $1 alone", () => {
    const vars = { a: "x", b: "y" };
    // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax
    expect(substitute("$a ${b} ${a:raw} [[b]]", vars)).toBe("x y x y");
    expect(substitute('label_replace(m, "d", "$1", "s", "(.*)")', vars)).toBe(
      'label_replace(m, "d", "$1", "s", "(.*)")',
    );
    expect(() => substitute("$", vars)).toThrow(/left after substitution/);
  });
});

describe("legend names", () => {
  it("fill Grafana's {{label}} placeholders, or show the label set when the format is empty", () => {
    expect(legendName("{{rpc}} {{ code }}", { rpc: "Mute", code: "429" })).toBe("Mute 429");
    expect(legendName("limit {{instance}}", {})).toBe("limit ");
    expect(legendName("", { __name__: "up", job: "boardline" })).toBe('up{job="boardline"}');
    expect(legendName("", {})).toBe("value");
  });
});
