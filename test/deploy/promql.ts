/**
 * The series names a PromQL expression reads, found by a small tokenizer rather than a regular
 * expression over the text, so that label names (`by (rpc)`, `{code="500"}`), label values, function
 * and aggregation names, durations and Grafana's `$__rate_interval` are never taken for a metric.
 * It knows the PromQL the dashboards write, and refuses what it does not know (an unclosed string
 * or bracket) instead of guessing. Also: the names a `/metrics` exposition exports.
 */

/** Aggregations, binary and set operators, modifiers and constants: words that are not series. */
const KEYWORDS = new Set([
  "sum",
  "min",
  "max",
  "avg",
  "group",
  "stddev",
  "stdvar",
  "count",
  "count_values",
  "bottomk",
  "topk",
  "quantile",
  "limitk",
  "limit_ratio",
  "and",
  "or",
  "unless",
  "atan2",
  "bool",
  "offset",
  "by",
  "without",
  "on",
  "ignoring",
  "group_left",
  "group_right",
  "inf",
  "nan",
]);
/** Words followed by a parenthesised list of label names, not of expressions. */
const LABEL_LISTS = new Set(["by", "without", "on", "ignoring", "group_left", "group_right"]);

const IDENT_START = /[A-Za-z_:]/;
const IDENT = /[A-Za-z0-9_:]/;

/** The series names `expr` reads, in order of appearance, each once. */
export function seriesNames(expr: string): string[] {
  const names: string[] = [];
  let i = 0;
  const skipSpace = () => {
    while (i < expr.length && /\s/.test(expr[i] as string)) i++;
  };
  /** Index just past the closing `close` of the group opening at `i`, strings inside skipped. */
  const past = (open: string, close: string): number => {
    let j = i + 1;
    while (j < expr.length && expr[j] !== close) {
      if (expr[j] === open) throw new Error(`nested "${open}" at ${j} in: ${expr}`);
      j = isQuote(expr[j]) ? pastString(expr, j) : j + 1;
    }
    if (j >= expr.length) throw new Error(`unclosed "${open}" at ${i} in: ${expr}`);
    return j + 1;
  };
  while (i < expr.length) {
    const c = expr[i] as string;
    if (/\s/.test(c)) i++;
    else if (isQuote(c)) i = pastString(expr, i);
    else if (c === "#") i = expr.includes("\n", i) ? expr.indexOf("\n", i) + 1 : expr.length;
    else if (c === "{") {
      // Label matchers; `{__name__="x"}` names a series too.
      const end = past("{", "}");
      const byName = /__name__\s*=\s*"([^"]*)"/.exec(expr.slice(i, end));
      if (byName?.[1] !== undefined) names.push(byName[1]);
      i = end;
    } else if (c === "[") i = past("[", "]");
    else if (c === "$") {
      // A Grafana variable: `$name` or `${name}`.
      i++;
      if (expr[i] === "{") i = past("{", "}");
      else while (i < expr.length && IDENT.test(expr[i] as string)) i++;
    } else if (/[0-9.]/.test(c)) {
      // A number, or a duration (`offset 5m`), or hex (`0x1f`).
      while (i < expr.length && /[0-9A-Za-z_.]/.test(expr[i] as string)) i++;
    } else if (IDENT_START.test(c)) {
      const start = i;
      while (i < expr.length && IDENT.test(expr[i] as string)) i++;
      const word = expr.slice(start, i);
      skipSpace();
      if (LABEL_LISTS.has(word.toLowerCase()) && expr[i] === "(") i = past("(", ")");
      else if (KEYWORDS.has(word.toLowerCase()) || expr[i] === "(") continue;
      else names.push(word);
    } else i++;
  }
  return [...new Set(names)];
}

function isQuote(c: string | undefined): boolean {
  return c === '"' || c === "'" || c === "`";
}

/** Index just past the string opening at `at` (backslash escapes, except in raw backtick strings). */
function pastString(expr: string, at: number): number {
  const quote = expr[at];
  for (let j = at + 1; j < expr.length; j++) {
    if (expr[j] === "\\" && quote !== "`") j++;
    else if (expr[j] === quote) return j + 1;
  }
  throw new Error(`unclosed string at ${at} in: ${expr}`);
}

/**
 * Every series name an exposition exports: each family of a `# TYPE` line (prom-client writes one
 * even for a family with no sample yet), with the `_bucket`, `_sum` and `_count` a histogram's
 * name implies and the `_sum` and `_count` of a summary, and every sample's name.
 */
export function exportedNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const line of exposition.split("\n")) {
    const type = /^# TYPE (\S+) (\S+)/.exec(line);
    if (type !== null) {
      const [, name, kind] = type as unknown as [string, string, string];
      names.add(name);
      if (kind === "histogram") for (const s of ["_bucket", "_sum", "_count"]) names.add(name + s);
      if (kind === "summary") for (const s of ["_sum", "_count"]) names.add(name + s);
    } else if (line !== "" && !line.startsWith("#")) {
      names.add(/^[A-Za-z_:][A-Za-z0-9_:]*/.exec(line)?.[0] ?? line);
    }
  }
  return names;
}

/** A Grafana panel of a dashboard's JSON, as far as its queries go; a row nests its collapsed panels. */
export interface PanelJson {
  readonly id?: number;
  readonly title?: string;
  readonly type?: string;
  readonly datasource?: { readonly uid?: string };
  readonly targets?: readonly { readonly expr?: string; readonly datasource?: { readonly uid?: string } }[];
  readonly panels?: readonly PanelJson[];
}

/** A Grafana dashboard's JSON, as far as these checks go. */
export interface DashboardJson {
  readonly panels?: readonly PanelJson[];
  readonly templating?: { readonly list?: readonly { name?: string; type?: string; query?: unknown }[] };
}

/** Each query of each panel of a dashboard, rows' nested panels included. */
export function panelQueries(dashboard: DashboardJson): { panel: string; expr: string }[] {
  const out: { panel: string; expr: string }[] = [];
  const walk = (panels: readonly PanelJson[]) => {
    for (const p of panels) {
      for (const t of p.targets ?? []) if (t.expr !== undefined) out.push({ panel: p.title ?? "", expr: t.expr });
      walk(p.panels ?? []);
    }
  };
  walk(dashboard.panels ?? []);
  return out;
}

/** `panel: name` for each series a query reads that `exported` lacks. */
export function unexported(dashboard: DashboardJson, exported: ReadonlySet<string>): string[] {
  return panelQueries(dashboard).flatMap(({ panel, expr }) =>
    seriesNames(expr)
      .filter((n) => !exported.has(n))
      .map((n) => `${panel}: ${n}`),
  );
}
