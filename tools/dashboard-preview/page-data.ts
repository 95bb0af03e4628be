// What the preview page is handed: each panel's data as Prometheus answered it, already aligned for
// the chart library. Shared by the Node side (main.ts) and the page's script (page/chart.ts).

import type { GridPos, PanelKind } from "./spec.js";

export interface PageSeries {
  readonly name: string;
  /** One per `PageData.times`; null where Prometheus had no sample (or NaN, e.g. a quantile of nothing). */
  readonly values: readonly (number | null)[];
}

export interface PagePanel {
  readonly kind: PanelKind;
  readonly title: string;
  readonly unit: string;
  readonly gridPos: GridPos;
  readonly series: readonly PageSeries[];
  /** A table panel's rows: its instant query's label sets and values. */
  readonly table?: { readonly columns: readonly string[]; readonly rows: readonly (readonly string[])[] };
}

export interface PageData {
  readonly title: string;
  /** What the picture is of, in a line under the title. */
  readonly subtitle: string;
  /** Unix seconds, every step of the run. */
  readonly times: readonly number[];
  readonly rows: readonly { readonly title: string; readonly gridPos: GridPos }[];
  readonly panels: readonly PagePanel[];
}
