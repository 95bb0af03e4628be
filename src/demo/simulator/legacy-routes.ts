/**
 * The routes of the Netless legacy file-conversion API (no cancel):
 *
 *   POST /v5/services/conversion/tasks              → 201 {uuid, type, status: "Waiting"}
 *   GET  /v5/services/conversion/tasks/{uuid}?type=  → 200 {uuid, type, status, failedReason?, progress}
 */
import { isConversionType } from "../../netless/json-values.js";
import { createTask, findTask, isAnswer } from "./create-request.js";
import { type Answer, errorAnswer } from "./http-io.js";
import { legacyAnswer } from "./legacy-answer.js";
import type { Route, RouteRequest } from "./router.js";
import type { SimulatorState } from "./state.js";
import { taskProgress } from "./tasks.js";

export const LEGACY_TASKS_PATH = "/v5/services/conversion/tasks";

function create(request: RouteRequest, state: SimulatorState): Answer {
  const task = createTask("legacy", request, state);
  if (isAnswer(task)) return task;
  return { status: 201, body: { uuid: task.uuid, type: task.type, status: "Waiting" } };
}

function query({ url, params }: RouteRequest, state: SimulatorState): Answer {
  const type = url.searchParams.get("type");
  if (!isConversionType(type)) return errorAnswer(400, "type must be static or dynamic");
  const task = findTask("legacy", params.uuid, state);
  // A task of the other type lives in the other service: not found there.
  if (task === undefined || task.type !== type) return errorAnswer(404, "task not found");
  return { status: 200, body: legacyAnswer(task, taskProgress(task, state.settings.now())) };
}

export const LEGACY_ROUTES: readonly Route[] = [
  { method: "POST", path: LEGACY_TASKS_PATH, operation: "create", okStatus: 201, write: true, handle: create },
  { method: "GET", path: `${LEGACY_TASKS_PATH}/:uuid`, operation: "query", okStatus: 200, write: false, handle: query },
];
