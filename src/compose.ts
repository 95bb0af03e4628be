/**
 * The composition root: adapters (store, authenticator, conversion backend)
 * → domain services (src/services) → the methods served → the server
 * (src/server). The process entry (main.ts) and the test harness both start
 * boardline through here, so the wiring exists once.
 */
import type { Logger } from "./log.js";
import type { Server } from "./server/start-server.js";
import { startServer } from "./server/start-server.js";
import type { ListenOptions } from "./server/listener.js";
import { servedMethods } from "./server/served-methods.js";
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
}

export function startService(o: ServiceOptions): Promise<Server> {
  const guard = o.guard ?? noGuard;
  const methods = servedMethods({
    pstn: new PstnControl(o.store, guard),
    whiteboard: new WhiteboardConversions(o.store, o.backend, guard),
  });
  return startServer({ ...o, methods, storeReady: () => o.store.ping() });
}
