/**
 * The composition root: adapters (store, authenticator, conversion backend)
 * → domain services (src/services) → the methods served → the server
 * (src/server). The process entry (main.ts) and the test harness both start
 * boardline through here, so the wiring exists once.
 */
import { randomUUID } from "node:crypto";
import { atMostOncePer, type Logger } from "./log.js";
import { conversionWebhookUrl } from "./server/json/conversion-webhook.js";
import { type Server, startServer } from "./server/start-server.js";
import type { ListenOptions } from "./server/http/listener.js";
import { servedMethods, servedStreams } from "./server/call/served-methods.js";
import { Openings, STREAM_OPENINGS_AT_ONCE } from "./server/call/openings.js";
import { ChannelAdmin } from "./services/channel/admin.js";
import { WhiteboardSettingsAdmin } from "./services/channel/whiteboard-settings.js";
import {
  ConversionFollower,
  DEFAULT_FOLLOWER_SETTINGS,
  type FollowerSettings,
} from "./services/conversion/follower.js";
import { ConversionTasks } from "./services/conversion/tasks.js";
import { ConversionSubmitter } from "./services/conversion/submitter.js";
import { ConversionWatchHub } from "./services/conversion/watch-hub.js";
import { ConversionWebhooks } from "./services/conversion/webhooks.js";
import { observedBackend } from "./services/conversion/observed-backend.js";
import type { Metrics } from "./server/ops/metrics.js";
import { NoGuard } from "./services/no-guard.js";
import type { PassphraseGuard } from "./services/passphrase-guard.js";
import {
  type Authenticator,
  type ConversionApi,
  type ConversionBackend,
  DEFAULT_LINE_LIMITS,
  type Store,
} from "./services/ports.js";
import { LeaseSweeper, sweepIntervalMs } from "./services/pstn/lease-sweeper.js";
import { LineReports } from "./services/pstn/line-reports.js";
import { LineModeration } from "./services/pstn/moderation.js";
import { PstnControl } from "./services/pstn/mute.js";
import type { CallTracer } from "./tracing/hooks.js";
import { PstnStateReader } from "./services/pstn/read-state.js";
import { retryLockMs, SafeRetries } from "./services/idempotency/safe-retries.js";
import { PstnWatches } from "./services/pstn/watch-events.js";
import { DEFAULT_PSTN_WATCH_SETTINGS, PstnWatchHub, type PstnWatchSettings } from "./services/pstn/watch-hub.js";
import { type Refusal, WatchSlots } from "./services/watch-slots.js";
import { defaultWatchShare } from "./config/watch-variables.js";
import { WhiteboardConversions } from "./services/conversion/convert.js";

export type { Server } from "./server/start-server.js";

export interface LaunchOptions extends ListenOptions {
  readonly store: Store;
  readonly authenticator: Authenticator;
  readonly backend: ConversionBackend;
  /** The wrong-passphrase limit; none by default. */
  readonly guard?: PassphraseGuard;
  readonly logger: Logger;
  readonly maxBodyBytes: number;
  readonly corsOrigins: readonly string[];
  /** Process-wide metrics (GC, memory) only for the real process, not for every test server. */
  readonly collectDefaultMetrics?: boolean;
  /** `/metrics` on a port of its own (METRICS_PORT). */
  readonly metricsPort?: number;
  /** How conversion tasks are followed to their end (default: the documented defaults). */
  readonly follow?: Partial<FollowerSettings>;
  /** The API new conversion tasks are meant for (CONVERSION_API; default projector). */
  readonly conversionApi?: ConversionApi;
  /** Watches at once on this instance, of conversions and of mute events together (MAX_WATCHES; default 10 000). */
  readonly maxWatches?: number;
  /**
   * The most watches one project holds on this instance (MAX_WATCHES_PER_PROJECT; default a quarter of
   * `maxWatches`, as the configuration's). Openings waiting their turn are bounded by `maxWatches` too.
   */
  readonly maxWatchesPerProject?: number;
  /** Channels one mute-event watch may name (MAX_WATCH_CHANNELS; default 1 000). */
  readonly maxWatchChannels?: number;
  /** How the mute-event watches read (default: the documented defaults; tests shorten the sweep). */
  readonly pstnWatch?: Partial<PstnWatchSettings>;
  /** A span per call (OpenTelemetry, src/tracing); none when tracing is off. */
  readonly tracer?: CallTracer;
  /** Conversion webhooks (CONVERSION_WEBHOOK_BASE, CONVERSION_WEBHOOK_SECRET); none by default. */
  readonly webhooks?: { readonly base: string; readonly secret: Uint8Array };
  /**
   * How long a ConvertFile sent with an Idempotency-Key holds its key, and an
   * unknown outcome keeps it (`retryLockMs` of the backend's and the store's
   * deadlines; default: that of the default deadlines, 15 s).
   */
  readonly idempotencyLockMs?: number;
  /** The lifetime of a channel created without `expire_time` (CHANNEL_DEFAULT_TTL_HOURS); none by default. */
  readonly channelDefaultTtlMs?: number;
  /** PSTN_PRESENCE_TTL_SECONDS in ms, which the store's line holds too: the lease sweep runs at a fraction of it. */
  readonly presenceLeaseMs?: number;
}

/** How often the watch hub reads the watched tasks: the most a watcher waits behind a saved change. */
const WATCH_POLL_MS = 250;

/**
 * Starts the server and the conversion follower; the server's `shutdown`
 * ends open watches (of conversions and of mute events) at once
 * (UNAVAILABLE, so clients reconnect elsewhere), lets the other requests
 * finish, then stops the follower — all before the caller closes the store.
 */
export async function launch(o: LaunchOptions): Promise<Server> {
  const guard = o.guard ?? new NoGuard();
  const settings = { ...DEFAULT_FOLLOWER_SETTINGS, ...o.follow };
  const maxWatches = o.maxWatches ?? 10_000;
  const slots = new WatchSlots(
    maxWatches,
    o.maxWatchesPerProject ?? defaultWatchShare(maxWatches),
    refusalLog(o.logger),
  );
  // More openings waiting than watches can be open would only wait to be refused (openings.ts).
  const openings = new Openings(STREAM_OPENINGS_AT_ONCE, maxWatches, linedUpLog(o.logger));
  const hub = new ConversionWatchHub(o.store, { pollMs: WATCH_POLL_MS, slots });
  const pstnHub = new PstnWatchHub(o.store.pstnEvents, slots, { ...DEFAULT_PSTN_WATCH_SETTINGS, ...o.pstnWatch });
  // The server's metrics once it has started (after the domain it serves), which count the conversions.
  let metrics: Metrics | undefined;
  const backend = observedBackend(o.backend, (operation, outcome) => metrics?.countBackendAnswer(operation, outcome));
  const follower = new ConversionFollower({
    onPoll: (lateMs) => metrics?.observeConversionPoll(lateMs),
    onFinished: (ms) => metrics?.observeConversionFinished(ms),
    store: o.store,
    backend,
    settings,
    owner: randomUUID(),
    // The store and the backend client log their outages themselves (once); this is the detail.
    onTrouble: (uuid, error) =>
      o.logger.debug(
        { task: uuid, reason: error instanceof Error ? error.message : String(error) },
        "conversion poll retried",
      ),
  });
  const webhooks = o.webhooks && conversionWebhooks(o.webhooks, o.store, follower);
  const submitter = conversionSubmitter({ ...o, backend }, settings, webhooks, () => metrics);
  const retries = new SafeRetries(o.store.idempotency, o.idempotencyLockMs ?? retryLockMs(10_000, 1_000));
  const domain = {
    pstn: new PstnControl(o.store, guard),
    pstnState: new PstnStateReader(o.store, guard),
    whiteboard: new WhiteboardConversions(o.store, guard, retries, {
      ...(o.conversionApi === undefined ? {} : { api: o.conversionApi }),
      queueMax: settings.queueMax,
      submitter,
      onQueued: (position) => metrics?.observeConversionQueued(position),
      onQueueFull: queueFullLog(o.logger),
    }),
    conversions: new ConversionTasks(o.store, backend, hub),
    pstnWatch: new PstnWatches(pstnHub, o.maxWatchChannels ?? 1000),
    lineReports: new LineReports(o.store),
    lineModeration: new LineModeration(o.store, guard),
    channelAdmin: new ChannelAdmin(o.store, retries, { defaultTtlMs: o.channelDefaultTtlMs }),
    whiteboardSettings: new WhiteboardSettingsAdmin(o.store),
  };
  const server = await startServer({
    ...o,
    methods: servedMethods(domain),
    streams: servedStreams(domain),
    storeReady: () => o.store.ping(),
    openings,
    ...(webhooks === undefined ? {} : { conversionWebhook: webhooks }),
  });
  metrics = server.metrics;
  o.store.observe?.(server.metrics.store);
  guard.observe?.(server.metrics.security);
  server.metrics.countWatchRefusals(() => slots.refused + openings.refused);
  follower.start();
  submitter.start();
  const sweeper = new LeaseSweeper(
    o.store.line,
    sweepIntervalMs(o.presenceLeaseMs ?? DEFAULT_LINE_LIMITS.leaseMs),
    (e) => o.logger.debug({ reason: e instanceof Error ? e.message : String(e) }, "presence lease sweep retried"),
  );
  sweeper.start();
  return {
    ...server,
    async shutdown(graceMs: number) {
      hub.close();
      pstnHub.close();
      await server.shutdown(graceMs);
      await Promise.all([follower.stop(), submitter.stop(), sweeper.stop()]);
    },
  };
}

/**
 * Warns of watches refused for want of a slot, at most once a second for each reason (every slot
 * taken, or a project's share), with how many since the last line.
 */
function refusalLog(logger: Logger): (inUse: number, why: Refusal, project: string) => void {
  const full = atMostOncePer(1_000, (passedOver, inUse: number) =>
    logger.warn(
      { refused: passedOver + 1, open: inUse },
      "watches refused: MAX_WATCHES are open; clients retry after Retry-After",
    ),
  );
  const share = atMostOncePer(1_000, (passedOver, inUse: number, project: string) =>
    logger.warn(
      { refused: passedOver + 1, open: inUse, project },
      "watches refused: a project has MAX_WATCHES_PER_PROJECT open; its clients retry after Retry-After",
    ),
  );
  return (inUse, why, project) => (why === "instance" ? full(inUse) : share(inUse, project));
}

/** Warns of stream openings refused because the queue of those waiting to open was full, at most once a second. */
function linedUpLog(logger: Logger): (waiting: number) => void {
  return atMostOncePer(1_000, (passedOver, waiting: number) =>
    logger.warn(
      { refused: passedOver + 1, waiting },
      "watches refused: MAX_WATCHES openings already wait their turn; clients retry after Retry-After",
    ),
  );
}

/** The instance's submitter of queued conversions, counted in `metrics` once the server has them. */
function conversionSubmitter(
  o: LaunchOptions,
  settings: FollowerSettings,
  webhooks: ConversionWebhooks | undefined,
  metrics: () => Metrics | undefined,
): ConversionSubmitter {
  return new ConversionSubmitter({
    store: o.store,
    backend: o.backend,
    settings,
    owner: randomUUID(),
    webhooks,
    onTrouble: (project, error) =>
      o.logger.debug(
        { project, reason: error instanceof Error ? error.message : String(error) },
        "conversion submission retried",
      ),
    onSubmission: (outcome, waitMs) => metrics()?.observeConversionSubmission(outcome, waitMs),
  });
}

/** Warns of requests refused for a full conversion queue, at most once a second, with how many since the last line. */
function queueFullLog(logger: Logger): (project: string, length: number) => void {
  return atMostOncePer(1_000, (passedOver, project: string, length: number) =>
    logger.warn(
      { refused: passedOver + 1, project, queued: length },
      "conversions refused: a project's queue holds CONVERSION_QUEUE_MAX requests; its clients retry after Retry-After",
    ),
  );
}

/** Webhook URLs under `base`, signed with `secret`; a call wakes this instance's follower. */
function conversionWebhooks(
  { base, secret }: NonNullable<LaunchOptions["webhooks"]>,
  store: Store,
  follower: ConversionFollower,
): ConversionWebhooks {
  return new ConversionWebhooks({
    secret,
    endpoint: (id, sig) => conversionWebhookUrl(base, id, sig),
    store,
    wakeFollower: () => follower.wake(),
  });
}
