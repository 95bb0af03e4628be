// The Grafana dashboards of deploy/monitoring/dashboards/, built with Grafana's typed builders
// (@grafana/grafana-foundation-sdk) rather than written as JSON by hand: a misspelt option or a
// panel of the wrong shape fails the typecheck instead of loading as a blank panel. Every query
// reads only boardline_ series; test/deploy/dashboards.test.ts checks each name against what a
// running server exports, so renaming a metric breaks the build until the dashboard follows.

import type * as cog from "@grafana/grafana-foundation-sdk/cog";
import {
  LegendDisplayMode,
  LegendPlacement,
  SortOrder,
  TooltipDisplayMode,
  VizLegendOptionsBuilder,
  VizTooltipOptionsBuilder,
} from "@grafana/grafana-foundation-sdk/common";
import {
  DashboardBuilder,
  DashboardCursorSync,
  DatasourceVariableBuilder,
  type Panel,
  RowBuilder,
} from "@grafana/grafana-foundation-sdk/dashboard";
import { DataqueryBuilder, PromQueryFormat } from "@grafana/grafana-foundation-sdk/prometheus";
import { PanelBuilder as StatPanelBuilder } from "@grafana/grafana-foundation-sdk/stat";
import { PanelBuilder as TablePanelBuilder } from "@grafana/grafana-foundation-sdk/table";
import { PanelBuilder as TimeseriesPanelBuilder } from "@grafana/grafana-foundation-sdk/timeseries";

export const DASHBOARD_DIR = "deploy/monitoring/dashboards";
export const OVERVIEW_JSON = `${DASHBOARD_DIR}/overview.json`;

/** Every panel queries the Prometheus the viewer picks in the dashboard's `datasource` variable. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, for Grafana to expand
export const DATASOURCE_UID = "${datasource}";
const DATASOURCE = { type: "prometheus", uid: DATASOURCE_UID };
const RATE = "$__rate_interval";
/** The RPCs whose server errors the SLOs count, and what counts as a server error (the `code` label). */
export const SLO_RPCS = ["Mute", "ConvertFile", "GetPstnState"] as const;
const SERVER_ERRORS = `code=~"500|503|504"`;

/** What a section's panels are built with: any builder of a Panel whose id can be set. */
type PanelBuilder = cog.Builder<Panel> & { id(id: number): PanelBuilder };

interface Query {
  readonly expr: string;
  readonly legend: string;
}

const q = (expr: string, legend: string): Query => ({ expr, legend });

function targets(queries: readonly Query[], instant = false): cog.Builder<cog.Dataquery>[] {
  return queries.map((query, i) => {
    const b = new DataqueryBuilder()
      .datasource(DATASOURCE)
      .refId(String.fromCharCode(65 + i))
      .expr(query.expr)
      .legendFormat(query.legend);
    return instant ? b.instant().format(PromQueryFormat.Table) : b.range();
  });
}

/** A time series panel, a third of the width. */
function series(title: string, unit: string, description: string, queries: readonly Query[]): PanelBuilder {
  return new TimeseriesPanelBuilder()
    .title(title)
    .description(description)
    .datasource(DATASOURCE)
    .unit(unit)
    .min(0)
    .legend(
      new VizLegendOptionsBuilder()
        .showLegend(true)
        .displayMode(LegendDisplayMode.List)
        .placement(LegendPlacement.Bottom),
    )
    .tooltip(new VizTooltipOptionsBuilder().mode(TooltipDisplayMode.Multi).sort(SortOrder.Descending))
    .span(8)
    .height(8)
    .targets(targets(queries));
}

/** The `q`-quantile of a histogram family per `by` label (none: one series), from its buckets. */
function quantile(q: number, family: string, by: readonly string[] = [], matchers = ""): string {
  const labels = [...by, "le"].join(", ");
  return `histogram_quantile(${q}, sum by (${labels}) (rate(${family}_bucket${matchers}[${RATE}])))`;
}

function perSecond(family: string, by: readonly string[], matchers = ""): string {
  const sum = by.length === 0 ? "sum" : `sum by (${by.join(", ")})`;
  return `${sum} (rate(${family}${matchers}[${RATE}]))`;
}

/** The share of `rpc`'s calls answered with a server error over `window`. */
function serverErrorRatio(window: string): string {
  const rpcs = `rpc=~"${SLO_RPCS.join("|")}"`;
  return (
    `sum by (rpc) (rate(boardline_calls_total{${rpcs}, ${SERVER_ERRORS}}[${window}]))` +
    ` / sum by (rpc) (rate(boardline_calls_total{${rpcs}}[${window}]))`
  );
}

function traffic(): PanelBuilder[] {
  return [
    series("Calls by RPC", "reqps", "Calls answered per second, by RPC, every protocol together.", [
      q(perSecond("boardline_calls_total", ["rpc"]), "{{rpc}}"),
    ]),
    series("Calls by protocol", "reqps", "Calls answered per second, by protocol (json, connect, grpc, grpc-web).", [
      q(perSecond("boardline_calls_total", ["protocol"]), "{{protocol}}"),
    ]),
    series(
      "Errors by RPC and code",
      "reqps",
      "Calls answered with an error per second, by RPC and code (docs/errors.md).",
      [q(perSecond("boardline_calls_total", ["rpc", "code"], `{code!="ok"}`), "{{rpc}} {{code}}")],
    ),
    series(
      "Latency p99 by RPC",
      "s",
      "99th percentile of the time in the call pipeline (auth, validation, operation).",
      [q(quantile(0.99, "boardline_call_duration_seconds", ["rpc"]), "{{rpc}}")],
    ),
    series("Latency p50 by RPC", "s", "Median time in the call pipeline.", [
      q(quantile(0.5, "boardline_call_duration_seconds", ["rpc"]), "{{rpc}}"),
    ]),
    series("Latency p99 by protocol", "s", "99th percentile of the time in the call pipeline, by protocol.", [
      q(quantile(0.99, "boardline_call_duration_seconds", ["protocol"]), "{{protocol}}"),
    ]),
  ];
}

function sloBurn(): PanelBuilder[] {
  const about =
    "Share of the SLO RPCs' calls answered 500, 503 or 504. Divided by the error budget (1 − the objective, docs/slos.md) it is the burn rate the alerts page on.";
  return [
    series("Server-error ratio, 1 h", "percentunit", about, [q(serverErrorRatio("1h"), "{{rpc}}")]),
    series("Server-error ratio, 5 m", "percentunit", about, [q(serverErrorRatio("5m"), "{{rpc}}")]),
    series("SLO RPCs' calls", "reqps", "The calls the ratios divide by: a ratio of few calls moves in big steps.", [
      q(perSecond("boardline_calls_total", ["rpc"], `{rpc=~"${SLO_RPCS.join("|")}"}`), "{{rpc}}"),
    ]),
  ];
}

function redis(): PanelBuilder[] {
  return [
    series(
      "Command duration p99 by family",
      "s",
      "99th percentile of a Redis command's (or script's) round trip, by what it serves.",
      [q(quantile(0.99, "boardline_redis_command_duration_seconds", ["family"]), "{{family}}")],
    ),
    series(
      "Errors by kind",
      "ops",
      "Redis commands that failed per second: timeout, connection, wrong_type, script, other.",
      [q(perSecond("boardline_redis_errors_total", ["kind"]), "{{kind}}")],
    ),
    series(
      "Reconnects and replica waits",
      "ops",
      "Reconnections and resubscriptions to Redis, and WAITs for REDIS_MIN_REPLICAS by outcome.",
      [
        q(perSecond("boardline_redis_reconnects_total", []), "reconnects"),
        q(perSecond("boardline_redis_resubscriptions_total", []), "resubscriptions"),
        q(perSecond("boardline_redis_replica_waits_total", ["outcome"]), "replica wait {{outcome}}"),
      ],
    ),
  ];
}

function watches(): PanelBuilder[] {
  return [
    series("Open watches", "short", "Watches open, by kind (pstn_events, conversion) and protocol.", [
      q("sum by (kind, protocol) (boardline_watches_open)", "{{kind}} {{protocol}}"),
    ]),
    series("Watches opened and ended", "ops", "Watches opened and ended per second, by kind.", [
      q(perSecond("boardline_watches_opened_total", ["kind"]), "opened {{kind}}"),
      q(perSecond("boardline_watches_ended_total", ["kind"]), "ended {{kind}}"),
    ]),
    series("Delivery delay p99", "s", "99th percentile of an event's delay to its watchers, by kind.", [
      q(quantile(0.99, "boardline_watch_delivery_delay_seconds", ["kind"]), "{{kind}}"),
    ]),
    series(
      "Watch refusals",
      "ops",
      "Watches refused per second (429 / RESOURCE_EXHAUSTED): MAX_WATCHES, or a project's share, reached.",
      [q(perSecond("boardline_watch_refusals_total", []), "refusals")],
    ),
  ];
}

function conversions(): PanelBuilder[] {
  return [
    series(
      "Queue wait p99",
      "s",
      "99th percentile of a conversion's wait in its project's queue, from ConvertFile's answer to the backend's.",
      [q(quantile(0.99, "boardline_conversion_queue_wait_seconds"), "wait p99")],
    ),
    series(
      "Submissions by outcome",
      "ops",
      "Queued conversions submitted to the backend per second: ok, over_capacity, rejected, error.",
      [q(perSecond("boardline_conversion_submissions_total", ["outcome"]), "{{outcome}}")],
    ),
    series(
      "Backend answers by outcome",
      "ops",
      "The conversion backend's answers per second, by operation and outcome.",
      [
        q(
          perSecond("boardline_conversion_backend_answers_total", ["operation", "outcome"]),
          "{{operation}} {{outcome}}",
        ),
      ],
    ),
    series(
      "Time to Finished",
      "s",
      "From ConvertFile's answer to the follower saving the task Finished: median and 99th percentile.",
      [
        q(quantile(0.5, "boardline_conversion_time_to_finished_seconds"), "p50"),
        q(quantile(0.99, "boardline_conversion_time_to_finished_seconds"), "p99"),
      ],
    ),
    series("Poll lateness p99", "s", "99th percentile of how late a conversion poll began after it was due.", [
      q(quantile(0.99, "boardline_conversion_poll_lateness_seconds"), "lateness p99"),
    ]),
    series("Queue length p99", "short", "99th percentile of a project's queue length as each request joined it.", [
      q(quantile(0.99, "boardline_conversion_queue_length"), "length p99"),
    ]),
  ];
}

function instances(): PanelBuilder[] {
  return [
    new StatPanelBuilder()
      .title("Ready instances")
      .description("Instances whose /readyz answers 200, of those scraped.")
      .datasource(DATASOURCE)
      .span(4)
      .height(8)
      .targets(targets([q("sum(boardline_ready)", "ready"), q("count(boardline_ready)", "scraped")])),
    new TablePanelBuilder()
      .title("Build")
      .description("What each instance runs: version, revision and Node.js.")
      .datasource(DATASOURCE)
      .span(4)
      .height(8)
      .targets(targets([q("count by (version, revision, node) (boardline_build_info)", "")], true)),
    series("Resident memory", "bytes", "Resident set size of each instance.", [
      q("boardline_process_resident_memory_bytes", "{{instance}}"),
    ]),
    series("Event-loop lag p99", "s", "99th percentile of the event loop's lag, as prom-client samples it.", [
      q("boardline_nodejs_eventloop_lag_p99_seconds", "{{instance}}"),
    ]),
    series("CPU", "percentunit", "CPU time per second of each instance (1 = one core).", [
      q(`rate(boardline_process_cpu_seconds_total[${RATE}])`, "{{instance}}"),
    ]),
    series("Heap used", "bytes", "V8 heap in use.", [q("boardline_nodejs_heap_size_used_bytes", "{{instance}}")]),
    series("Open file descriptors", "short", "File descriptors open, and the limit.", [
      q("boardline_process_open_fds", "{{instance}}"),
      q("boardline_process_max_fds", "limit {{instance}}"),
    ]),
    series(
      "Listener errors and refusals",
      "ops",
      "Errors of the listening socket by code (EMFILE: a connection not accepted), and tokens and passphrases refused per second.",
      [
        q(perSecond("boardline_listener_errors_total", ["code"]), "listener {{code}}"),
        q(perSecond("boardline_token_refusals_total", ["reason"]), "token {{reason}}"),
        q(perSecond("boardline_guess_limit_refusals_total", []), "guess limit"),
        q(perSecond("boardline_passphrase_misses_total", []), "passphrase miss"),
      ],
    ),
  ];
}

const SECTIONS: readonly [string, () => PanelBuilder[]][] = [
  ["Traffic, errors and latency", traffic],
  ["SLO burn", sloBurn],
  ["Redis", redis],
  ["Watches", watches],
  ["Conversions", conversions],
  ["Instances", instances],
];

/** The overview dashboard, as Grafana imports it (and as its sidecar loads it from a ConfigMap). */
export function overviewDashboard(): ReturnType<DashboardBuilder["build"]> {
  const builder = new DashboardBuilder("boardline overview")
    .uid("boardline-overview")
    .tags(["boardline"])
    .description("Traffic, errors, latency, SLO burn, Redis, watches, conversions and instances of boardline.")
    .editable()
    .tooltip(DashboardCursorSync.Crosshair)
    .time({ from: "now-6h", to: "now" })
    .refresh("30s")
    .withVariable(new DatasourceVariableBuilder("datasource").label("Data source").type("prometheus"));
  // Ids from 1 in order: Grafana links to a panel by its id (`viewPanel=`), so they stay put as long
  // as panels are only added at the end.
  let id = 0;
  for (const [title, panels] of SECTIONS) {
    builder.withRow(new RowBuilder(title).id(++id));
    for (const panel of panels()) builder.withPanel(panel.id(++id));
  }
  return builder.build();
}

/** The committed text of a dashboard: two-space JSON and a final newline. */
export function renderDashboard(dashboard: object): string {
  return `${JSON.stringify(dashboard, null, 2)}\n`;
}
