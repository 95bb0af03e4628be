/**
 * Prometheus metrics (prom-client: the standard Node.js client, with process
 * and GC collectors for free). One registry per server, so tests can run
 * several servers in one process.
 */
import { Counter, collectDefaultMetrics, Histogram, Registry } from "prom-client";
import type { BackendOperation, BackendOutcome } from "../../services/conversion/observed-backend.js";
import type { SubmissionOutcome } from "../../services/ports.js";
import { registerBuildInfo, registerReady } from "./process-metrics.js";
import { SecurityMetrics } from "./security-metrics.js";
import { bind, StoreMetrics, zeroed } from "./store-metrics.js";
import { WatchMetrics } from "./watch-metrics.js";

const BACKEND_OPERATIONS: readonly BackendOperation[] = ["create", "query", "cancel"];
const BACKEND_OUTCOMES: readonly BackendOutcome[] = ["ok", "over_capacity", "not_found", "error"];

export class Metrics {
  readonly registry = new Registry();
  private readonly calls: Counter<"rpc" | "protocol" | "code">;
  private readonly duration: Histogram<"rpc" | "protocol">;
  private readonly listenerErrors: Counter<"code">;
  private readonly pollLateness: Histogram;
  private readonly submissions: Counter<"outcome">;
  private readonly queueWait: Histogram;
  private readonly queuePlace: Histogram;
  private readonly backendAnswers: Record<BackendOperation, Record<BackendOutcome, Counter.Internal>>;
  private readonly timeToFinished: Histogram;
  /** The Redis store's series; the store reports to it (compose.ts hands it over). */
  readonly store: StoreMetrics;
  readonly watches: WatchMetrics;
  /** Passphrases and tokens; the passphrase guard reports to it (compose.ts hands it over). */
  readonly security: SecurityMetrics;

  constructor(options: { collectDefault?: boolean } = {}) {
    if (options.collectDefault ?? true) collectDefaultMetrics({ register: this.registry, prefix: "boardline_" });
    registerBuildInfo(this.registry);
    this.store = new StoreMetrics(this.registry);
    this.watches = new WatchMetrics(this.registry);
    this.security = new SecurityMetrics(this.registry);
    const answers = new Counter({
      name: "boardline_conversion_backend_answers_total",
      help: "Answers of the conversion backend to this instance, by operation (create, query, cancel) and outcome: ok, over_capacity (its limit of tasks), not_found (a task it does not know), error (5xx, unreachable, timed out, refused).",
      labelNames: ["operation", "outcome"],
      registers: [this.registry],
    });
    this.backendAnswers = bind(BACKEND_OPERATIONS, (op) =>
      bind(BACKEND_OUTCOMES, (out) => zeroed(answers.labels(op, out))),
    );
    this.timeToFinished = new Histogram({
      name: "boardline_conversion_time_to_finished_seconds",
      help: "From a conversion's acceptance (ConvertFile's answer) to this instance's follower saving it Finished.",
      buckets: [1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800],
      registers: [this.registry],
    });
    this.calls = new Counter({
      name: "boardline_calls_total",
      help: "Calls by RPC, protocol and outcome (ok, or the documented error code).",
      labelNames: ["rpc", "protocol", "code"],
      registers: [this.registry],
    });
    this.duration = new Histogram({
      name: "boardline_call_duration_seconds",
      help: "Time spent in the call pipeline (auth, validation, operation).",
      labelNames: ["rpc", "protocol"],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
      registers: [this.registry],
    });
    this.listenerErrors = new Counter({
      name: "boardline_listener_errors_total",
      help: "Errors of the listening socket (e.g. EMFILE: a connection not accepted for want of a file descriptor), by code.",
      labelNames: ["code"],
      registers: [this.registry],
    });
    this.pollLateness = new Histogram({
      name: "boardline_conversion_poll_lateness_seconds",
      help: "How late each conversion poll of this instance began after the task was due (its count: the polls made).",
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [this.registry],
    });
    this.submissions = new Counter({
      name: "boardline_conversion_submissions_total",
      help: "Submissions of queued conversions to the backend by this instance, by outcome: ok, over_capacity (the backend's limit: the request stays at the head of its queue), rejected (the request ends as Fail), error (retried).",
      labelNames: ["outcome"],
      registers: [this.registry],
    });
    this.queueWait = new Histogram({
      name: "boardline_conversion_queue_wait_seconds",
      help: "How long each conversion this instance submitted waited in its project's queue, from ConvertFile's answer to the backend's.",
      buckets: [0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800],
      registers: [this.registry],
    });
    this.queuePlace = new Histogram({
      name: "boardline_conversion_queue_length",
      help: "The length of its project's queue as each request joined it (its place from 1): one series however many projects.",
      buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 5000],
      registers: [this.registry],
    });
  }

  /** A submission of a queued conversion: its outcome, and how long (ms) the request waited since it was accepted. */
  observeConversionSubmission(outcome: SubmissionOutcome, waitMs: number): void {
    this.submissions.inc({ outcome });
    if (outcome === "ok") this.queueWait.observe(waitMs / 1000);
  }

  /** A request accepted into its project's queue at `position` (from 1): the queue's length then. */
  observeConversionQueued(position: number): void {
    this.queuePlace.observe(position);
  }

  /** The conversion backend answered `operation` with `outcome` (src/services/conversion/observed-backend.ts). */
  countBackendAnswer(operation: BackendOperation, outcome: BackendOutcome): void {
    this.backendAnswers[operation][outcome].inc();
  }

  /** The follower saved a conversion Finished, `sinceAcceptedMs` after it was accepted. */
  observeConversionFinished(sinceAcceptedMs: number): void {
    this.timeToFinished.observe(sinceAcceptedMs / 1000);
  }

  /** `boardline_ready`: what `ready` (the answer of /readyz) says at each scrape. */
  reportReadiness(ready: () => Promise<boolean>): void {
    registerReady(this.registry, ready);
  }

  observeConversionPoll(lateMs: number): void {
    this.pollLateness.observe(lateMs / 1000);
  }

  /** `boardline_watch_refusals_total`: watches refused for want of a slot or of a place in the queue, as `read` counts them. */
  countWatchRefusals(read: () => number): void {
    new Counter({
      name: "boardline_watch_refusals_total",
      help: "Watches (WatchPstnEvents, WatchConversion) refused with 429 / RESOURCE_EXHAUSTED because MAX_WATCHES were open, or the project's MAX_WATCHES_PER_PROJECT, or MAX_WATCHES openings already waited their turn.",
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(read());
      },
    });
  }

  countListenerError(code: string): void {
    this.listenerErrors.inc({ code });
  }

  observeCall(rpc: string, protocol: string, code: string, startedAt: number): void {
    this.calls.inc({ rpc, protocol, code });
    this.duration.observe({ rpc, protocol }, (performance.now() - startedAt) / 1000);
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
