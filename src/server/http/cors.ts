/**
 * CORS for the origins in `CORS_ORIGINS`, so browsers can call the JSON routes
 * (and Connect / gRPC-Web) cross-origin with a Bearer token. No cookies are
 * used, so credentials are never allowed.
 */
import { cors as connectCors } from "@connectrpc/connect";
import type { NodeRequest, NodeResponse } from "./request-answer.js";

// Last-Event-ID: a fetch-based SSE client resuming a watch of mute events sends it.
const ALLOW_HEADERS = [
  ...new Set([
    "Authorization",
    "Content-Type",
    "X-Request-Id",
    "X-Session-Id",
    "Last-Event-ID",
    "Idempotency-Key",
    ...connectCors.allowedHeaders,
  ]),
].join(", ");
const EXPOSE_HEADERS = [
  ...new Set(["X-Request-Id", "WWW-Authenticate", "Retry-After", ...connectCors.exposedHeaders]),
].join(", ");
const ALLOW_METHODS = [...new Set(["POST", "GET", "OPTIONS", ...connectCors.allowedMethods])].join(", ");

export class Cors {
  private readonly any: boolean;
  private readonly origins: Set<string>;

  /** `origins`: exact origins (`https://app.example.com`), or `*` for any. */
  constructor(origins: readonly string[]) {
    this.any = origins.includes("*");
    this.origins = new Set(origins.map((o) => o.toLowerCase()));
  }

  /**
   * Adds the CORS headers for an allowed origin. Returns true when the request
   * was a preflight and has been answered.
   */
  apply(req: NodeRequest, res: NodeResponse): boolean {
    if (!this.any && this.origins.size === 0) return false;
    // The answer depends on Origin whether or not this request has one: a
    // cache must not hand a response without CORS headers to a browser.
    res.setHeader("vary", "Origin");
    const origin = req.headers.origin;
    if (origin === undefined) return false;
    const allowed = this.any || this.origins.has(origin.toLowerCase());
    const preflight = req.method === "OPTIONS" && req.headers["access-control-request-method"] !== undefined;
    if (allowed) {
      res.setHeader("access-control-allow-origin", origin);
      res.setHeader("access-control-expose-headers", EXPOSE_HEADERS);
    }
    if (!preflight) return false;
    if (allowed) {
      res.setHeader("access-control-allow-methods", ALLOW_METHODS);
      res.setHeader("access-control-allow-headers", ALLOW_HEADERS);
      res.setHeader("access-control-max-age", "7200");
    }
    res.statusCode = 204;
    res.end();
    return true;
  }
}
