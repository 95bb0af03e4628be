/**
 * One request's way through the simulator: read and record it, find its route
 * (404, 405), play the active faults, check the token (401) and the region
 * (400), then let the route answer.
 */
import type http from "node:http";
import { REGIONS, type Region } from "../../services/ports.js";
import { playFaults } from "./faults.js";
import { errorAnswer, header, parseBody, readBody, recordRequest, send } from "./http-io.js";
import { FILES_PATH, servePageImage } from "./page-images.js";
import { matchRoute, type Route } from "./router.js";
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
  if (await playFaults(state.faults, state.faults.take(route.operation), req, res, route.okStatus)) return;

  const refusal = state.refuseToken(header(req, "token"), route.write);
  if (refusal !== undefined) {
    send(res, errorAnswer(401, refusal));
    return;
  }
  const region = header(req, "region");
  if (!isRegion(region)) {
    send(res, errorAnswer(400, `region must be one of ${REGIONS.join(", ")}`));
    return;
  }
  send(res, route.handle({ req, url, body, params, region }, state));
}

function isRegion(value: string | undefined): value is Region {
  return (REGIONS as readonly string[]).includes(value ?? "");
}
