/**
 * The composition root: adapters (store, authenticator, conversion backend)
 * → domain services (src/services) → the methods served → the server
 * (src/server). The process entry (main.ts) and the test harness both start
 * boardline through here, so the wiring exists once.
 */
import { randomUUID } from "node:crypto";
import type { Logger } from "./log.js";
import type { Server } from "./server/start-server.js";
import { startServer } from "./server/start-server.js";
import type { ListenOptions } from "./server/listener.js";
import { servedMethods } from "./server/served-methods.js";
import {
  ConversionFollower,
  DEFAULT_FOLLOWER_SETTINGS,
  type FollowerSettings,
} from "./services/conversion-follower.js";
import { ConversionTasks } from "./services/conversion-tasks.js";
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
}

/**
 * Starts the server and the conversion follower; the server's `shutdown`
 * stops both (the follower after the last request, before the caller closes
 * the store).
 */
export async function startService(o: ServiceOptions): Promise<Server> {
  const guard = o.guard ?? noGuard;
  const settings = { ...DEFAULT_FOLLOWER_SETTINGS, ...o.follow };
  const methods = servedMethods({
    pstn: new PstnControl(o.store, guard),
    whiteboard: new WhiteboardConversions(o.store, o.backend, guard, settings.firstPollMs),
    conversions: new ConversionTasks(o.store, o.backend),
  });
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
  const server = await startServer({ ...o, methods, storeReady: () => o.store.ping() });
  follower.start();
  return {
    ...server,
    async shutdown(graceMs: number) {
      await server.shutdown(graceMs);
      await follower.stop();
    },
  };
}
