/**
 * The Redis store's series: a `StoreObserver` (src/services/store-observer.ts)
 * that the composition root hands the store. Every labelled child is made
 * once here, so a command (a mute's, say) costs a property read and one
 * histogram observation: no label lookup, no allocation.
 */
import { Counter, type Registry } from "prom-client";
import { BoundHistogram, type HistogramChild } from "./bound-histogram.js";
import {
  COMMAND_FAMILIES,
  type CommandFamily,
  REDIS_ERROR_KINDS,
  type RedisErrorKind,
  type StoreObserver,
} from "../../services/store-observer.js";

export class StoreMetrics implements StoreObserver {
  private readonly durations: Record<CommandFamily, HistogramChild>;
  private readonly errors: Record<RedisErrorKind, Counter.Internal>;
  private readonly reconnects: Counter;
  private readonly replicaWaits: { ok: Counter.Internal; failed: Counter.Internal };
  private readonly resubscriptions: Counter;

  constructor(registry: Registry) {
    const registers = [registry];
    const duration = new BoundHistogram(
      "boardline_redis_command_duration_seconds",
      "Time of each Redis call of the store (with REDIS_MIN_REPLICAS, a write's WAIT included), by family of operation.",
      [0.0002, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registry,
    );
    const errors = new Counter({
      name: "boardline_redis_errors_total",
      help: "Redis calls of the store that failed (answered 503), by kind: timeout, connection, wrong_type, script, other.",
      labelNames: ["kind"],
      registers,
    });
    this.reconnects = new Counter({
      name: "boardline_redis_reconnects_total",
      help: "Times the store's connection to Redis was ready again after it had been lost.",
      registers,
    });
    const waits = new Counter({
      name: "boardline_redis_replica_waits_total",
      help: "WAITs after acknowledged writes (REDIS_MIN_REPLICAS), by outcome: ok, or failed (too few replicas in time, or the connection replaced: the write answered 503).",
      labelNames: ["outcome"],
      registers,
    });
    this.resubscriptions = new Counter({
      name: "boardline_redis_resubscriptions_total",
      help: "Channels the mute-event subscriber subscribed again after its connection was lost or their slot moved (a reconnection, a failover).",
      registers,
    });
    this.durations = bind(COMMAND_FAMILIES, (family) => duration.child({ family }));
    this.errors = bind(REDIS_ERROR_KINDS, (k) => zeroed(errors.labels(k)));
    this.replicaWaits = { ok: zeroed(waits.labels("ok")), failed: zeroed(waits.labels("failed")) };
  }

  onCommand(family: CommandFamily, seconds: number, error?: RedisErrorKind): void {
    this.durations[family].observe(seconds);
    if (error !== undefined) this.errors[error].inc();
  }

  onReconnect(): void {
    this.reconnects.inc();
  }

  onReplicaWait(ok: boolean): void {
    (ok ? this.replicaWaits.ok : this.replicaWaits.failed).inc();
  }

  onResubscribed(channels: number): void {
    this.resubscriptions.inc(channels);
  }
}

/** One child per label value, made now. */
export function bind<K extends string, C>(values: readonly K[], child: (value: K) => C): Record<K, C> {
  return Object.fromEntries(values.map((v) => [v, child(v)])) as Record<K, C>;
}

/** A counter's or gauge's child, exported at 0 from the start (so `rate()` sees its first increase). */
export function zeroed<C extends { inc(value?: number): void }>(child: C): C {
  child.inc(0);
  return child;
}
