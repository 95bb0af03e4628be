/**
 * Routing of the GET-only pages outside the API (the ops endpoints, the API
 * reference page and document): `getRoute` answers the request itself with 404
 * `no_route` when the path names none of the routes, or with 405 and `Allow`
 * for a method other than GET or HEAD, and returns undefined then. Otherwise it
 * drains the request body, if any, and returns the route for the caller to answer.
 */
import { transportError } from "../call/error-table.js";
import { type NodeRequest, type NodeResponse, reply } from "../http/request-answer.js";

export function getRoute<T>(
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
