/**
 * The composition root: adapters (store, authenticator, conversion backend)
 * → domain services (src/services) → the methods served → the server
 * (src/server). The process entry (main.ts) and the test harness both start
 * boardline through here, so the wiring exists once.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "./log.js";
import { type Server, startServer } from "./server/start-server.js";
import type { ListenOptions } from "./server/listener.js";
import { servedMethods, servedStreams } from "./server/served-methods.js";
import {
  ConversionFollower,
  DEFAULT_FOLLOWER_SETTINGS,
  type FollowerSettings,
} from "./services/conversion-follower.js";
import { ConversionTasks } from "./services/conversion-tasks.js";
import { ConversionWatchHub } from "./services/conversion-watch-hub.js";
import { noGuard, type PassphraseGuard } from "./services/passphrase-guard.js";
import type { Authenticator, ConversionBackend, Store } from "./services/ports.js";
import { PstnControl } from "./services/pstn.js";
import { WhiteboardConversions } from "./services/whiteboard.js";

export type { Server } from "./server/start-server.js";

export interface ServiceOptions extends ListenOptions {
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
  /** Watches of conversions at once on this instance (MAX_WATCHES; default 10 000). */
  readonly maxWatches?: number;
}

/** How often the watch hub reads the watched tasks: the most a watcher waits behind a saved change. */
const WATCH_POLL_MS = 250;

/**
 * Starts the server and the conversion follower; the server's `shutdown`
 * ends open watches at once (UNAVAILABLE, so clients reconnect elsewhere),
 * lets the other requests finish, then stops the follower — all before the
 * caller closes the store.
 */
export async function startService(o: ServiceOptions): Promise<Server> {
  const guard = o.guard ?? noGuard;
  const settings = { ...DEFAULT_FOLLOWER_SETTINGS, ...o.follow };
  const hub = new ConversionWatchHub(o.store, { pollMs: WATCH_POLL_MS, maxWatches: o.maxWatches ?? 10_000 });
  const domain = {
    pstn: new PstnControl(o.store, guard),
    whiteboard: new WhiteboardConversions(o.store, o.backend, guard, settings.firstPollMs),
    conversions: new ConversionTasks(o.store, o.backend, hub),
  };
  const follower = new ConversionFollower({
    store: o.store,
    backend: o.backend,
    settings,
    owner: randomUUID(),
    // The store and the backend client log their outages themselves (once); this is the detail.
    onTrouble: (uuid, error) =>
      o.logger.debug(
        { task: uuid, reason: error instanceof Error ? error.message : String(error) },
        "conversion poll retried",
      ),
  });
  const server = await startServer({
    ...o,
    methods: servedMethods(domain),
    streams: servedStreams(domain),
    storeReady: () => o.store.ping(),
  });
  follower.start();
  return {
    ...server,
    async shutdown(graceMs: number) {
      hub.close();
      await server.shutdown(graceMs);
      await follower.stop();
    },
  };
}
