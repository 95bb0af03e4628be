// What `npm run dashboard:preview` draws, read from the generated dashboard JSON rather than from
// tools/dashboards.ts's builders: the picture then shows what Grafana imports, and a panel the
// preview cannot draw (a new panel type, a collapsed row, an unknown variable) is refused here, where
// test/deploy/dashboard-preview.test.ts sees it, instead of going missing from the picture.

/** Grafana's variables as the preview substitutes them. */
export const PREVIEW_VARIABLES: Readonly<Record<string, string>> = {
  datasource: "prometheus",
  // Grafana's own choice at a 1 s scrape would be 4 s: too jagged for a run of under a minute.
  __rate_interval: "15s",
  __interval: "1s",
};

export type PanelKind = "timeseries" | "stat" | "table";
const KINDS: readonly string[] = ["timeseries", "stat", "table"] satisfies PanelKind[];

export interface GridPos {
  readonly x: number;
  readonly y: number;
  readonly w: number;
  readonly h: number;
}

export interface PreviewQuery {
  readonly expr: string;
  /** Grafana's legend format (`{{label}}` placeholders), empty for the label set. */
  readonly legend: string;
  /** An instant query (a table's), else a range query over the run. */
  readonly instant: boolean;
}

export interface PreviewPanel {
  readonly id: number;
  readonly kind: PanelKind;
  readonly title: string;
  /** Grafana's unit id (`reqps`, `s`, `bytes`, `percentunit`, …); empty when the panel sets none. */
  readonly unit: string;
  readonly gridPos: GridPos;
  readonly queries: readonly PreviewQuery[];
}

export interface PreviewRow {
  readonly title: string;
  readonly gridPos: GridPos;
  readonly panels: readonly PreviewPanel[];
}

export interface PreviewSpec {
  readonly title: string;
  readonly rows: readonly PreviewRow[];
}

interface RawPanel {
  readonly id?: number;
  readonly type?: string;
  readonly title?: string;
  readonly collapsed?: boolean;
  readonly panels?: readonly unknown[];
  readonly gridPos?: GridPos;
  readonly fieldConfig?: { readonly defaults?: { readonly unit?: string } };
  readonly targets?: readonly { expr?: string; legendFormat?: string; instant?: boolean; hide?: boolean }[];
}

/**
 * Grafana's `$name`, `${name}`, `${name:format}` and `[[name]]`, each replaced from `variables`; a
 * name it does not know is refused rather than sent to Prometheus as text. `$1` and the like are
 * regular-expression references (label_replace's), not variables, and are left alone.
 */
export function substitute(text: string, variables: Readonly<Record<string, string>>): string {
  const out = text.replace(
    /\$\{(\w+)(?::\w+)?\}|\$([A-Za-z_]\w*)|\[\[(\w+)\]\]/g,
    (whole, braced?: string, bare?: string, bracketed?: string) => {
      const name = braced ?? bare ?? bracketed ?? "";
      const value = variables[name];
      if (value === undefined) throw new Error(`unknown dashboard variable ${whole} in: ${text}`);
      return value;
    },
  );
  if (/\$(?!\d)/.test(out)) throw new Error(`a "$" left after substitution in: ${out}`);
  return out;
}

/** The rows and panels of a dashboard JSON, queries substituted; throws on what it cannot draw. */
export function previewSpec(
  dashboard: unknown,
  variables: Readonly<Record<string, string>> = PREVIEW_VARIABLES,
): PreviewSpec {
  const d = dashboard as { title?: string; panels?: readonly RawPanel[] };
  if (!Array.isArray(d.panels)) throw new Error("the dashboard has no panels array");
  const rows: { title: string; gridPos: GridPos; panels: PreviewPanel[] }[] = [];
  for (const raw of d.panels) {
    const where = `panel ${raw.id} "${raw.title}"`;
    if (raw.gridPos === undefined) throw new Error(`${where}: no gridPos`);
    if (raw.type === "row") {
      // A collapsed row keeps its panels inside it, where the page would not show them.
      if (raw.collapsed === true || (raw.panels ?? []).length > 0) throw new Error(`${where}: a collapsed row`);
      rows.push({ title: substitute(raw.title ?? "", variables), gridPos: raw.gridPos, panels: [] });
      continue;
    }
    if (!KINDS.includes(raw.type ?? "")) throw new Error(`${where}: type ${raw.type} is not drawn by the preview`);
    const row = rows.at(-1);
    if (row === undefined) throw new Error(`${where}: before the first row`);
    const targets: NonNullable<RawPanel["targets"]> = raw.targets ?? [];
    const queries = targets
      .filter((t) => t.hide !== true)
      .map((t) => {
        if (typeof t.expr !== "string" || t.expr === "") throw new Error(`${where}: a target without expr`);
        return {
          expr: substitute(t.expr, variables),
          legend: substitute(t.legendFormat ?? "", variables),
          instant: t.instant === true,
        };
      });
    if (queries.length === 0) throw new Error(`${where}: no queries`);
    row.panels.push({
      id: raw.id ?? 0,
      kind: raw.type as PanelKind,
      title: substitute(raw.title ?? "", variables),
      unit: raw.fieldConfig?.defaults?.unit ?? "",
      gridPos: raw.gridPos,
      queries,
    });
  }
  return { title: d.title ?? "", rows };
}

/** A series' name as Grafana's legend shows it: `{{label}}` filled in, or the label set when empty. */
export function legendName(format: string, labels: Readonly<Record<string, string>>): string {
  if (format === "") {
    const { __name__: name = "", ...rest } = labels;
    const set = Object.entries(rest)
      .map(([k, v]) => `${k}="${v}"`)
      .join(", ");
    return set === "" ? name || "value" : `${name}{${set}}`;
  }
  return format.replace(/\{\{\s*(\w+)\s*\}\}/g, (_, label: string) => labels[label] ?? "");
}
