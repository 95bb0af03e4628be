// The preview page's script: lays the panels out on Grafana's grid (24 columns, rows of 30 px) and
// draws each with uPlot, in colours close to Grafana's dark theme so the picture reads as the
// dashboard it stands for. Its data is the JSON in <script id="preview-data">; when every panel is
// drawn it sets `data-ready` on <body>, which the screenshot waits for.

import uPlot from "uplot";
import type { PageData, PagePanel } from "../page-data.js";

const PALETTE = ["#73bf69", "#f2cc0c", "#8ab8ff", "#ff780a", "#f2495c", "#5794f2", "#b877d9", "#705da0", "#37872d"];
const GRID_ROW_PX = 30;
const GRID_GAP_PX = 8;
const TEXT = "#ccccdc";
const AXIS_FONT = '11px "DejaVu Sans", sans-serif';
const GRID_LINES = "rgba(204, 204, 220, 0.09)";

/** A number in three significant figures at most, without trailing zeros. */
function short(n: number): string {
  if (n === 0) return "0";
  const abs = Math.abs(n);
  for (const [size, suffix] of [
    [1e9, " G"],
    [1e6, " M"],
    [1e3, " k"],
  ] as const) {
    if (abs >= size) return `${Number((n / size).toPrecision(3))}${suffix}`;
  }
  return String(Number(n.toPrecision(3)));
}

/** A value in Grafana's unit (the few the dashboard uses; any other as a plain number). */
function formatValue(unit: string, n: number): string {
  switch (unit) {
    case "reqps":
      return `${short(n)} req/s`;
    case "ops":
      return `${short(n)} ops/s`;
    case "percentunit":
      return `${Number((n * 100).toPrecision(3))}%`;
    case "s": {
      const abs = Math.abs(n);
      if (abs === 0) return "0 s";
      if (abs < 1e-3) return `${Number((n * 1e6).toPrecision(3))} µs`;
      if (abs < 1) return `${Number((n * 1e3).toPrecision(3))} ms`;
      return `${Number(n.toPrecision(3))} s`;
    }
    case "bytes": {
      const units = ["B", "KiB", "MiB", "GiB"];
      let v = n;
      let i = 0;
      while (Math.abs(v) >= 1024 && i < units.length - 1) {
        v /= 1024;
        i++;
      }
      return `${Number(v.toPrecision(3))} ${units[i]}`;
    }
    default:
      return short(n);
  }
}

function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  text = "",
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  e.className = className;
  e.textContent = text;
  return e;
}

function place(e: HTMLElement, g: { x: number; y: number; w: number; h: number }): void {
  e.style.gridColumn = `${g.x + 1} / span ${g.w}`;
  e.style.gridRow = `${g.y + 1} / span ${g.h}`;
}

function drawSeries(body: HTMLElement, panel: PagePanel, times: readonly number[]): void {
  const shown = panel.series.filter((s) => s.values.some((v) => v !== null));
  if (shown.length === 0) {
    body.append(element("div", "no-data", "No data"));
    return;
  }
  // The legend is the page's own, laid out before the chart, so the plot takes what is left of the
  // panel (uPlot sizes its plot before its own legend is laid out).
  const legend = element("div", "legend");
  shown.forEach((s, i) => {
    const item = element("span", "legend-item", s.name);
    item.style.setProperty("--colour", colour(i));
    legend.append(item);
  });
  const plot = element("div", "plot");
  body.append(plot, legend);
  const data = [times, ...shown.map((s) => s.values)] as unknown as uPlot.AlignedData;
  const opts: uPlot.Options = {
    width: plot.clientWidth,
    height: plot.clientHeight,
    legend: { show: false },
    cursor: { show: false },
    scales: { y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
    axes: [
      {
        stroke: TEXT,
        font: AXIS_FONT,
        grid: { stroke: GRID_LINES },
        ticks: { stroke: GRID_LINES },
        // Times of day in UTC, without uPlot's second line of dates: the run is under a minute.
        values: (_u, splits) => splits.map((t) => new Date(t * 1000).toISOString().slice(11, 19)),
      },
      {
        stroke: TEXT,
        font: AXIS_FONT,
        grid: { stroke: GRID_LINES },
        ticks: { stroke: GRID_LINES },
        size: 78,
        values: (_u, splits) => splits.map((v) => formatValue(panel.unit, v)),
      },
    ],
    series: [
      {},
      ...shown.map((s, i) => ({
        label: s.name,
        stroke: colour(i),
        width: 1.25,
        points: { show: false },
        spanGaps: false,
      })),
    ],
  };
  new uPlot(opts, data, plot);
}

const colour = (i: number): string => PALETTE[i % PALETTE.length] as string;

function drawStat(body: HTMLElement, panel: PagePanel): void {
  const stats = element("div", "stats");
  for (const s of panel.series) {
    const last = [...s.values].reverse().find((v) => v !== null);
    const stat = element("div", "stat");
    stat.append(element("div", "stat-value", last == null ? "–" : formatValue(panel.unit, last)));
    stat.append(element("div", "stat-name", s.name));
    stats.append(stat);
  }
  body.append(stats);
}

function drawTable(body: HTMLElement, panel: PagePanel): void {
  const table = element("table", "table");
  const head = element("tr", "");
  for (const c of panel.table?.columns ?? []) head.append(element("th", "", c));
  table.append(head);
  for (const r of panel.table?.rows ?? []) {
    const tr = element("tr", "");
    for (const cell of r) tr.append(element("td", "", cell));
    table.append(tr);
  }
  body.append(table);
}

function main(): void {
  const data = JSON.parse(document.getElementById("preview-data")?.textContent ?? "null") as PageData;
  document.title = data.title;
  const header = element("header", "");
  header.append(element("h1", "", data.title), element("p", "", data.subtitle));
  const grid = element("main", "grid");
  grid.style.gridAutoRows = `${GRID_ROW_PX}px`;
  grid.style.gap = `${GRID_GAP_PX}px`;
  document.body.append(header, grid);
  for (const row of data.rows) {
    const title = element("h2", "row", row.title);
    place(title, row.gridPos);
    grid.append(title);
  }
  const bodies: [HTMLElement, PagePanel][] = [];
  for (const panel of data.panels) {
    const box = element("section", "panel");
    place(box, panel.gridPos);
    const body = element("div", "panel-body");
    box.append(element("h3", "", panel.title), body);
    grid.append(box);
    bodies.push([body, panel]);
  }
  // Drawn after the layout, so each chart is sized to its grid cell.
  for (const [body, panel] of bodies) {
    if (panel.kind === "stat") drawStat(body, panel);
    else if (panel.kind === "table") drawTable(body, panel);
    else drawSeries(body, panel, data.times);
  }
  document.body.dataset.ready = "true";
}

main();
