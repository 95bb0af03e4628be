/**
 * grpc.health.v1.Health. The overall status ("") and each served service's
 * status is SERVING while the store answers, NOT_SERVING otherwise.
 */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import {
  Health,
  type HealthCheckRequest,
  HealthCheckResponse_ServingStatus as ServingStatus,
  HealthCheckResponseSchema,
} from "../../gen/grpc/health/v1/health_pb.js";

/** How often Watch re-checks the store. */
const WATCH_INTERVAL_MS = 2000;

export function registerHealth(router: ConnectRouter, services: readonly string[], ready: () => Promise<boolean>) {
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
        const now = await status(req);
        if (now !== last) {
          last = now;
          yield create(HealthCheckResponseSchema, { status: now });
        }
        await sleep(WATCH_INTERVAL_MS, ctx.signal);
      }
    },
  });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
