/**
 * The watches' series (WatchPstnEvents, WatchConversion): open, opened,
 * ended, by kind and protocol, and how long after its event each message
 * reached the watcher. A watch's children are found once, when it opens: its
 * messages cost one histogram observation each, no label lookup or allocation.
 */
import { Counter, Gauge, type Registry } from "prom-client";
import { BoundHistogram, type HistogramChild } from "./bound-histogram.js";
import { bind, zeroed } from "./store-metrics.js";

export const WATCH_KINDS = ["pstn_events", "conversion"] as const;
export type WatchKind = (typeof WATCH_KINDS)[number];
export const PROTOCOLS = ["json", "connect", "grpc", "grpc-web"] as const;
export type Protocol = (typeof PROTOCOLS)[number];

/** One open watch's series. */
export interface WatchMeter {
  /** A message whose event happened at `eventMs` (epoch ms) is written to the watcher now. */
  delivered(eventMs: number): void;
  /** The watch ended (whatever ended it). */
  ended(): void;
}

type Children = { readonly open: Gauge.Internal<"kind" | "protocol">; readonly ended: Counter.Internal };

export class WatchMetrics {
  private readonly children: Record<WatchKind, Record<Protocol, Children>>;
  private readonly opened: Record<WatchKind, Record<Protocol, Counter.Internal>>;
  private readonly delay: Record<WatchKind, HistogramChild>;

  constructor(registry: Registry) {
    const registers = [registry];
    const open = new Gauge({
      name: "boardline_watches_open",
      help: "Watches open on this instance now, by kind (pstn_events, conversion) and protocol.",
      labelNames: ["kind", "protocol"],
      registers,
    });
    const opened = new Counter({
      name: "boardline_watches_opened_total",
      help: "Watches established on this instance (refusals are boardline_watch_refusals_total), by kind and protocol.",
      labelNames: ["kind", "protocol"],
      registers,
    });
    const ended = new Counter({
      name: "boardline_watches_ended_total",
      help: "Watches that ended on this instance (ran out, failed, the client went away, or the shutdown), by kind and protocol.",
      labelNames: ["kind", "protocol"],
      registers,
    });
    const delay = new BoundHistogram(
      "boardline_watch_delivery_delay_seconds",
      "From an event's time (a mute event's `at`, a conversion change's `updated_at`) to its message's writing to a watcher, by kind; not the state a watch opens with.",
      [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registry,
    );
    this.children = bind(WATCH_KINDS, (kind) =>
      bind(PROTOCOLS, (protocol) => ({
        open: zeroed(open.labels(kind, protocol)),
        ended: zeroed(ended.labels(kind, protocol)),
      })),
    );
    this.opened = bind(WATCH_KINDS, (kind) => bind(PROTOCOLS, (protocol) => zeroed(opened.labels(kind, protocol))));
    this.delay = bind(WATCH_KINDS, (kind) => delay.child({ kind }));
  }

  /** A watch of `kind` established over `protocol`: counted, and its meter for the rest of it. */
  open(kind: WatchKind, protocol: Protocol): WatchMeter {
    const children = this.children[kind][protocol];
    const delay = this.delay[kind];
    this.opened[kind][protocol].inc();
    children.open.inc();
    return {
      delivered: (eventMs) => delay.observe(Math.max(0, Date.now() - eventMs) / 1000),
      ended: () => {
        children.open.dec();
        children.ended.inc();
      },
    };
  }
}
