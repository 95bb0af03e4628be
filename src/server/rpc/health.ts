/**
 * grpc.health.v1.Health. The overall status ("") and each served service's
 * status is SERVING while the store answers, NOT_SERVING otherwise (and while
 * the server drains: `ready` says false then). Watch streams end when the
 * server starts draining, after telling the watcher NOT_SERVING, so they do
 * not hold a graceful shutdown up.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import {
  Health,
  type HealthCheckRequest,
  HealthCheckResponse_ServingStatus as ServingStatus,
  HealthCheckResponseSchema,
} from "../../../gen/grpc/health/v1/health_pb.js";

/** How often Watch re-checks the store. */
const WATCH_INTERVAL_MS = 2000;

export function registerHealth(
  router: ConnectRouter,
  services: readonly string[],
  ready: () => Promise<boolean>,
  draining: AbortSignal = new AbortController().signal,
) {
  const known = new Set(["", ...services]);
  const status = async (req: HealthCheckRequest) => {
    if (!known.has(req.service)) throw new ConnectError(`unknown service ${req.service}`, Code.NotFound);
    return (await ready()) ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
  };
  router.service(Health, {
    async check(req) {
      return create(HealthCheckResponseSchema, { status: await status(req) });
    },
    async *watch(req, ctx: HandlerContext) {
      if (!known.has(req.service)) {
        yield create(HealthCheckResponseSchema, { status: ServingStatus.SERVICE_UNKNOWN });
        return;
      }
      let last: ServingStatus | undefined;
      while (!ctx.signal.aborted) {
        const now = draining.aborted ? ServingStatus.NOT_SERVING : await status(req);
        if (now !== last) {
          last = now;
          yield create(HealthCheckResponseSchema, { status: now });
        }
        if (draining.aborted) return;
        await sleep(WATCH_INTERVAL_MS, ctx.signal, draining);
      }
    },
  });
}

/** Sleeps `ms`, or less when one of the signals aborts. */
function sleep(ms: number, ...signals: AbortSignal[]): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      for (const signal of signals) signal.removeEventListener("abort", done);
      resolve();
    }
    for (const signal of signals) signal.addEventListener("abort", done, { once: true });
    if (signals.some((signal) => signal.aborted)) done();
  });
}
