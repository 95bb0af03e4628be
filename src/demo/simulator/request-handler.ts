/**
 * One request's way through the simulator: read and record it, find its route
 * (404, 405), play the active faults, check the token (401) and the region
 * (400), then let the route answer — late, when a "slow" fault says so.
 */
import type http from "node:http";
import { REGIONS, type Region } from "../../services/ports.js";
import { playFaults, replacesAnswer, sleepThroughSlowFaults } from "./faults.js";
import { type Answer, errorAnswer, header, parseBody, readBody, recordRequest, send } from "./http-io.js";
import { FILES_PATH, servePageImage } from "./page-images.js";
import { matchRoute, type Route, type RouteRequest } from "./router.js";
import type { SimulatorState } from "./state.js";

export async function handleRequest(
  state: SimulatorState,
  routes: readonly Route[],
  req: http.IncomingMessage,
  res: http.ServerResponse,
): Promise<void> {
  const url = new URL(req.url ?? "/", "http://simulator");
  if (state.settings.serveFiles && req.method === "GET" && url.pathname.startsWith(`${FILES_PATH}/`)) {
    servePageImage(url.pathname, res); // the files a CDN would serve: not the API, not recorded
    return;
  }
  const text = await readBody(req);
  if (text === undefined) {
    send(res, errorAnswer(413, "body too large"));
    return;
  }
  const body = parseBody(text);
  state.recorded.push(recordRequest(req, body, state.settings.now()));

  const match = matchRoute(routes, req.method, url.pathname);
  if (match.kind === "not-found") {
    send(res, errorAnswer(404, "not found"));
    return;
  }
  if (match.kind === "wrong-method") {
    send(res, errorAnswer(405, "method not allowed"), { allow: match.allow });
    return;
  }
  const { route, params } = match;
  const faults = state.faults.take(route.operation);
  if (replacesAnswer(faults)) {
    await playFaults(state.faults, faults, req, res, route.okStatus);
    return;
  }
  // The work is done on arrival and only the answer waits out a "slow" fault, as
  // a real backend that is slow to answer has already acted: a create made its
  // task (and took its token of the limit) even if the client gives up meanwhile.
  const answer = routeAnswer(state, route, { req, url, body, params });
  if (await sleepThroughSlowFaults(state.faults, faults, req, res)) return;
  send(res, answer);
}

/** The answer of a request past its faults: 401 for its token, 400 for its region, else its route's. */
function routeAnswer(state: SimulatorState, route: Route, request: Omit<RouteRequest, "region" | "project">): Answer {
  const verdict = state.checkToken(header(request.req, "token"), route.write);
  if ("refusal" in verdict) return errorAnswer(401, verdict.refusal);
  const region = header(request.req, "region");
  if (!isRegion(region)) return errorAnswer(400, `region must be one of ${REGIONS.join(", ")}`);
  return route.handle({ ...request, region, project: verdict.project }, state);
}

function isRegion(value: string | undefined): value is Region {
  return (REGIONS as readonly string[]).includes(value ?? "");
}
