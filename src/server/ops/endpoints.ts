/**
 * The plain HTTP endpoints for operators: `GET /healthz` (alive), `GET
 * /readyz` (the store answers and the server is not draining) and `GET
 * /metrics` (Prometheus). GET and HEAD only; never cached.
 */
import type { Logger } from "../../log.js";
import { toJsonError } from "../call/error-table.js";
import type { Metrics } from "./metrics.js";
import { type Answer, type NodeRequest, type NodeResponse, reply } from "../http/request-answer.js";
import { getRoute } from "./get-routes.js";

export interface OpsEndpointsOptions {
  /** Serve `/metrics` here; undefined when it is served on a port of its own. */
  readonly metrics: Metrics | undefined;
  /** Resolves true when the store answers and the server is not draining. */
  readonly ready: () => Promise<boolean>;
  /** True once the server is shutting down (then /readyz says so rather than blaming the store). */
  readonly draining?: () => boolean;
  readonly logger: Logger;
}

function notReadyBody(draining: boolean): string {
  const reason = draining ? "the server is shutting down" : "the store does not answer";
  return JSON.stringify({ status: "unavailable", reason });
}

export class OpsEndpoints {
  private readonly answers: Map<string, () => Promise<Answer>>;

  constructor(private readonly o: OpsEndpointsOptions) {
    const metrics = o.metrics;
    this.answers = new Map<string, () => Promise<Answer>>([
      ["/healthz", async () => ({ status: 200, body: '{"status":"ok"}' })],
      [
        "/readyz",
        async () =>
          (await o.ready())
            ? { status: 200, body: '{"status":"ready"}' }
            : { status: 503, body: notReadyBody(o.draining?.() ?? false) },
      ],
    ]);
    if (metrics !== undefined) {
      this.answers.set("/metrics", async () => {
        const m = await metrics.render();
        return { status: 200, body: m.body, contentType: m.contentType };
      });
    }
  }

  has(path: string): boolean {
    return this.answers.has(path);
  }

  handle(path: string, req: NodeRequest, res: NodeResponse): void {
    const answer = getRoute(this.answers, path, req, res);
    if (answer === undefined) return;
    answer()
      .then((a) => {
        res.setHeader("cache-control", "no-store");
        reply(res, a, req.method === "HEAD");
      })
      .catch((e: unknown) => {
        this.o.logger.error({ err: e }, "request failed unexpectedly");
        reply(res, toJsonError(e));
      });
  }
}
