/**
 * A histogram whose labelled children are plain objects made once: observing
 * one finds its bucket and adds, with no label hashing, validation or
 * allocation (prom-client's own children hash and validate their labels and
 * allocate on every observation). For the series observed on the request
 * path (each Redis command, each message to a watcher). The registry renders
 * it as any histogram, from `get()`.
 */
import type { Metric, Registry } from "prom-client";

export class HistogramChild {
  /** Observations per bucket (not cumulative); the last is above every bound (+Inf). */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    private readonly bounds: readonly number[],
    readonly labels: Readonly<Record<string, string>>,
  ) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > (bounds[i] as number)) i++;
    this.counts[i] = (this.counts[i] as number) + 1;
    this.sum += value;
    this.count++;
  }
}

export class BoundHistogram {
  readonly type = "histogram";
  readonly aggregator = "sum";
  private readonly children: HistogramChild[] = [];

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly buckets: readonly number[],
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  /** The child of these labels; call once per label set and keep it. */
  child(labels: Readonly<Record<string, string>>): HistogramChild {
    const child = new HistogramChild(this.buckets, labels);
    this.children.push(child);
    return child;
  }

  async get(): Promise<{
    name: string;
    help: string;
    type: "histogram";
    aggregator: "sum";
    values: { value: number; labels: Record<string, string | number>; metricName: string }[];
  }> {
    const values = [];
    for (const c of this.children) {
      let cumulative = 0;
      for (let i = 0; i <= this.buckets.length; i++) {
        cumulative += c.counts[i] as number;
        const le = i < this.buckets.length ? (this.buckets[i] as number) : "+Inf";
        values.push({ value: cumulative, labels: { ...c.labels, le }, metricName: `${this.name}_bucket` });
      }
      values.push({ value: c.sum, labels: { ...c.labels }, metricName: `${this.name}_sum` });
      values.push({ value: c.count, labels: { ...c.labels }, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  /** `registry.resetMetrics()` resets every metric it holds. */
  reset(): void {
    for (const c of this.children) {
      c.counts.fill(0);
      c.sum = 0;
      c.count = 0;
    }
  }
}
