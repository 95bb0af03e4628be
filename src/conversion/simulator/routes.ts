/**
 * The routes the simulator serves, those of the Netless legacy file-conversion API:
 *
 *   POST /v5/services/conversion/tasks              → 201 {uuid, type, status: "Waiting"}
 *   GET  /v5/services/conversion/tasks/{uuid}?type=  → 200 {uuid, type, status, failedReason?, progress}
 *
 * Every route is behind the same fault, token and region checks (see
 * `request-handler.ts`); a new API adds its entries to `SIMULATOR_ROUTES`.
 */
import { randomUUID } from "node:crypto";
import { isConversionType } from "../task-shapes.js";
import { type Answer, errorAnswer } from "./http-io.js";
import type { Route, RouteRequest } from "./router.js";
import type { SimulatorState } from "./state.js";
import { type SimulatedTaskSpec, taskState } from "./tasks.js";

const TASKS_PATH = "/v5/services/conversion/tasks";

function createTask({ req, body, region }: RouteRequest, state: SimulatorState): Answer {
  if (!(req.headers["content-type"] ?? "").toLowerCase().startsWith("application/json")) {
    return errorAnswer(400, "content-type must be application/json");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return errorAnswer(400, "the body must be a JSON object");
  }
  const { resource, type, scale, preview } = body as Record<string, unknown>;
  if (typeof resource !== "string" || !isHttpUrl(resource)) return errorAnswer(400, "resource must be an http(s) URL");
  if (!isConversionType(type)) return errorAnswer(400, "type must be static or dynamic");
  if (scale !== undefined && !(typeof scale === "number" && scale >= 0.1 && scale <= 3)) {
    return errorAnswer(400, "scale must be a number from 0.1 to 3");
  }
  if (preview !== undefined && typeof preview !== "boolean") return errorAnswer(400, "preview must be a boolean");

  const task: SimulatedTaskSpec = {
    // Real task UUIDs are 32 hex digits.
    uuid: randomUUID().replaceAll("-", ""),
    type,
    resource,
    ...(typeof scale === "number" ? { scale } : {}),
    region,
    createdAt: state.settings.now(),
    pageCount: state.settings.pageCount,
    willFail: state.settings.failWhen(resource),
  };
  state.tasks.set(task.uuid, task);
  return { status: 201, body: { uuid: task.uuid, type: task.type, status: "Waiting" } };
}

function queryTask({ url, params }: RouteRequest, state: SimulatorState): Answer {
  const type = url.searchParams.get("type");
  if (!isConversionType(type)) return errorAnswer(400, "type must be static or dynamic");
  const task = state.tasks.get(params.uuid ?? "");
  // A task of the other type lives in the other service: not found there.
  if (task === undefined || task.type !== type) return errorAnswer(404, "task not found");
  return { status: 200, body: taskState(task, state.settings.now(), state.settings.progressMs) };
}

export const SIMULATOR_ROUTES: readonly Route[] = [
  { method: "POST", path: TASKS_PATH, okStatus: 201, write: true, handle: createTask },
  { method: "GET", path: `${TASKS_PATH}/:uuid`, okStatus: 200, write: false, handle: queryTask },
];

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}
