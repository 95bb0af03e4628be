// `npm run dashboard:preview`: a picture of the overview dashboard without a Grafana, for
// docs/operations.md. A live boardline (the real process, a redis-server, the conversion simulator;
// test/harness/live-boardline.ts) gets ~40 s of mixed traffic (./traffic.ts) while Debian's
// Prometheus scrapes it every second; then every panel of the generated overview.json has its
// queries run against Prometheus's HTTP API over the run, and the answers are drawn with uPlot on a
// page laid out on the dashboard's grid, which headless Chromium screenshots to
// docs/dashboard-overview.png. Everything it starts is stopped at the end, failed or not.
// PREVIEW_SECONDS sets the traffic's length; PREVIEW_HTML=file also writes the page there;
// CHROMIUM_PATH names another browser than /usr/bin/chromium.

import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { chromium } from "playwright-core";
import { ROOT } from "../../test/harness/build-dist.js";
import { type LiveBoardline, startLiveBoardline } from "../../test/harness/live-boardline.js";
import { type Prometheus, startPrometheus } from "../../test/harness/prometheus.js";
import { sleep } from "../../test/harness/sleep.js";
import { OVERVIEW_JSON } from "../dashboards.js";
import type { PageData, PagePanel, PageSeries } from "./page-data.js";
import { legendName, PREVIEW_VARIABLES, type PreviewPanel, type PreviewSpec, previewSpec } from "./spec.js";
import { driveTraffic } from "./traffic.js";

const OUTPUT = "docs/dashboard-overview.png";
const SECONDS = Number(process.env.PREVIEW_SECONDS ?? 40);
const STEP_SECONDS = 1;
const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const WIDTH = 1400;
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

interface PromSeries {
  readonly metric: Record<string, string>;
  readonly values?: [number, string][];
  readonly value?: [number, string];
}

async function promQuery(prometheus: Prometheus, path: string, params: Record<string, string>): Promise<PromSeries[]> {
  const res = await fetch(`${prometheus.url}/api/v1/${path}?${new URLSearchParams(params)}`);
  const body = (await res.json()) as { status: string; error?: string; data?: { result: PromSeries[] } };
  if (body.status !== "success" || body.data === undefined) {
    throw new Error(`${params.query}: ${body.error ?? res.status}`);
  }
  return body.data.result;
}

/** One panel's answers, aligned on `times` (start, start + step, …). */
async function panelData(prometheus: Prometheus, panel: PreviewPanel, times: readonly number[]): Promise<PagePanel> {
  const start = times[0] as number;
  const end = times.at(-1) as number;
  const series: PageSeries[] = [];
  let table: PagePanel["table"];
  for (const query of panel.queries) {
    if (query.instant) {
      const result = await promQuery(prometheus, "query", { query: query.expr, time: String(end) });
      const labels = [...new Set(result.flatMap((r) => Object.keys(r.metric)))].sort();
      table = {
        columns: [...labels, "Value"],
        rows: result.map((r) => [...labels.map((l) => r.metric[l] ?? ""), r.value?.[1] ?? ""]),
      };
      continue;
    }
    const result = await promQuery(prometheus, "query_range", {
      query: query.expr,
      start: String(start),
      end: String(end),
      step: String(STEP_SECONDS),
    });
    for (const r of result) {
      const values: (number | null)[] = times.map(() => null);
      for (const [t, v] of r.values ?? []) {
        const n = Number(v);
        const i = Math.round((t - start) / STEP_SECONDS);
        if (i >= 0 && i < values.length && Number.isFinite(n)) values[i] = n;
      }
      series.push({ name: legendName(query.legend, r.metric), values });
    }
  }
  series.sort((a, b) => a.name.localeCompare(b.name));
  return {
    kind: panel.kind,
    title: panel.title,
    unit: panel.unit,
    gridPos: panel.gridPos,
    series,
    ...(table === undefined ? {} : { table }),
  };
}

async function pageHtml(data: PageData): Promise<string> {
  // uPlot and the page's script in one inline bundle: the page loads nothing from anywhere.
  const bundle = await build({
    entryPoints: [join(ROOT, "tools/dashboard-preview/page/chart.ts")],
    bundle: true,
    format: "iife",
    minify: true,
    write: false,
    target: "chrome120",
    logLevel: "silent",
  });
  const script = bundle.outputFiles[0]?.text ?? "";
  const uplotCss = readFileSync(join(ROOT, "node_modules/uplot/dist/uPlot.min.css"), "utf8");
  const json = JSON.stringify(data).replace(/</g, "\\u003c");
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>${data.title}</title>
<style>${uplotCss}</style>
<style>${readFileSync(join(ROOT, "tools/dashboard-preview/page/page.css"), "utf8")}</style>
</head><body>
<script type="application/json" id="preview-data">${json}</script>
<script>${script.replace(/<\/script/gi, "<\\/script")}</script>
</body></html>`;
}

async function screenshot(html: string): Promise<void> {
  const profile = mkdtempSync(join(tmpdir(), "boardline-chromium-"));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: WIDTH, height: 900 },
    timezoneId: "UTC",
    locale: "en-GB",
  });
  try {
    const page = browser.pages()[0] ?? (await browser.newPage());
    const problems: string[] = [];
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("console", (m) => {
      if (m.type() === "error") problems.push(`console: ${m.text()}`);
    });
    page.on("request", (r) => {
      if (!r.url().startsWith("data:") && r.url() !== "about:blank") problems.push(`request: ${r.url()}`);
    });
    await page.setContent(html);
    await page.waitForSelector("body[data-ready]", { timeout: 15_000 });
    if (problems.length > 0) throw new Error(`the page:\n${problems.join("\n")}`);
    await page.screenshot({ path: join(ROOT, OUTPUT), fullPage: true });
  } finally {
    await browser.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

async function run(spec: PreviewSpec, live: LiveBoardline, prometheus: Prometheus): Promise<PageData> {
  const start = Math.floor(Date.now() / 1000);
  console.log(`traffic for ${SECONDS} s …`);
  const counts = await driveTraffic(live, SECONDS);
  console.log([...counts].map(([what, n]) => `  ${what}: ${n}`).join("\n"));
  // Two more scrapes, so the last second of traffic is in Prometheus.
  await sleep(2_500);
  const end = Math.floor(Date.now() / 1000);
  const times = Array.from(
    { length: Math.floor((end - start) / STEP_SECONDS) + 1 },
    (_, i) => start + i * STEP_SECONDS,
  );
  const panels: PagePanel[] = [];
  for (const row of spec.rows) for (const panel of row.panels) panels.push(await panelData(prometheus, panel, times));
  return {
    title: spec.title,
    subtitle:
      `Drawn by npm run dashboard:preview (uPlot, not Grafana): the dashboard's queries over ${SECONDS} s of ` +
      `generated traffic on one live instance, scraped every second; $__rate_interval = ${PREVIEW_VARIABLES.__rate_interval}.`,
    times,
    rows: spec.rows.map((r) => ({ title: r.title, gridPos: r.gridPos })),
    panels,
  };
}

async function main(): Promise<void> {
  const spec = previewSpec(JSON.parse(readFileSync(join(ROOT, OVERVIEW_JSON), "utf8")));
  let live: LiveBoardline | undefined;
  let prometheus: Prometheus | undefined;
  let data: PageData;
  try {
    live = await startLiveBoardline();
    prometheus = await startPrometheus({ targets: [`127.0.0.1:${live.process.metricsPort}`] });
    data = await run(spec, live, prometheus);
  } finally {
    await prometheus?.stop();
    await live?.stop();
  }
  const html = await pageHtml(data);
  // The page itself, to work on its look without a new run (open it in a browser).
  if (process.env.PREVIEW_HTML) writeFileSync(process.env.PREVIEW_HTML, html);
  await screenshot(html);
  console.log(`${OUTPUT}: ${Math.round(statSync(join(ROOT, OUTPUT)).size / 1024)} KiB`);
}

// An explicit exit: a client's keep-alive socket to the stopped service must not hold the process.
main().then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
