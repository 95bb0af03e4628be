/**
 * The shared start of the read-only routes outside the API (the ops
 * endpoints, the API reference page and document): the path must name one of
 * the routes (else 404 `no_route`) and the method be GET or HEAD (else 405 with
 * `Allow`). Then the request body, if any, is drained and the route returned.
 */
import { transportError } from "./error-table.js";
import { type NodeRequest, type NodeResponse, reply } from "./node-http.js";

export function readOnlyRoute<T>(
  routes: ReadonlyMap<string, T>,
  path: string,
  req: NodeRequest,
  res: NodeResponse,
): T | undefined {
  const route = routes.get(path);
  if (route === undefined) {
    reply(res, transportError({ kind: "no_route" }));
    return undefined;
  }
  if (req.method !== "GET" && req.method !== "HEAD") {
    reply(res, transportError({ kind: "method_not_allowed", allow: ["GET", "HEAD"] }));
    return undefined;
  }
  req.resume();
  return route;
}
