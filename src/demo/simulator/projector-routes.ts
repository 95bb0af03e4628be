/**
 * The routes of the Netless projector file-conversion API:
 *
 *   POST   /v5/projector/tasks          → 201 {uuid, type, status: "Waiting"}
 *   GET    /v5/projector/tasks/{uuid}   → 200 the task (projector-answer.ts)
 *   DELETE /v5/projector/tasks/{uuid}   → 200 the task, Abort (a finished or failed task stays as it is)
 *
 * An unknown task (or one of the legacy API) is 404 with the "task not found" error code. A task
 * created with a `webhookEndpoint` has it called when it ends (webhooks.ts).
 */
import { createTask, findTask, isAnswer } from "./create-request.js";
import type { Answer } from "./http-io.js";
import { projectorAnswer } from "./projector-answer.js";
import type { Route, RouteRequest } from "./router.js";
import type { SimulatorState } from "./state.js";
import { isTerminal, type SimulatedTaskSpec, taskProgress } from "./tasks.js";

export const PROJECTOR_TASKS_PATH = "/v5/projector/tasks";
/** The projector API's error code for "task not found". */
export const TASK_NOT_FOUND_ERROR_CODE = 2010605;

function create(request: RouteRequest, state: SimulatorState): Answer {
  const task = createTask("projector", request, state);
  if (isAnswer(task)) return task;
  state.webhooks.scheduleEnd(task);
  return { status: 201, body: { uuid: task.uuid, type: task.type, status: "Waiting" } };
}

function query({ params }: RouteRequest, state: SimulatorState): Answer {
  const task = findTask("projector", params.uuid, state);
  if (task === undefined) return notFound();
  return { status: 200, body: projectorAnswer(task, taskProgress(task, state.settings.now())) };
}

function cancel({ params }: RouteRequest, state: SimulatorState): Answer {
  const task = findTask("projector", params.uuid, state);
  if (task === undefined) return notFound();
  const now = state.settings.now();
  let after: SimulatedTaskSpec = task;
  if (!isTerminal(taskProgress(task, now).status)) {
    after = { ...task, abortedAt: now };
    state.tasks.set(task.uuid, after);
    state.webhooks.callNow(task.uuid);
  }
  return { status: 200, body: projectorAnswer(after, taskProgress(after, now)) };
}

function notFound(): Answer {
  const message = "task not found";
  return { status: 404, body: { message, errorCode: TASK_NOT_FOUND_ERROR_CODE, errorMessage: message } };
}

const TASK_PATH = `${PROJECTOR_TASKS_PATH}/:uuid`;

export const PROJECTOR_ROUTES: readonly Route[] = [
  { method: "POST", path: PROJECTOR_TASKS_PATH, operation: "create", okStatus: 201, write: true, handle: create },
  { method: "GET", path: TASK_PATH, operation: "query", okStatus: 200, write: false, handle: query },
  { method: "DELETE", path: TASK_PATH, operation: "cancel", okStatus: 200, write: true, handle: cancel },
];
