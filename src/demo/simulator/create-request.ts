/**
 * The checks both APIs make on a request to start a conversion, and the task
 * it becomes: a JSON object body with an http(s) `resource`, a `type`, and
 * optional `scale` (0.1–3), `preview` and (projector) `webhookEndpoint`. A
 * request that passes them still needs a token of its project's creates limit
 * (create-limit.ts); one refused before that takes none.
 */
import { randomUUID } from "node:crypto";
import type { ConversionApi } from "../../services/ports.js";
import { isConversionType, isHttpUrl } from "../../netless/json-values.js";
import { tooManyTasksAnswer } from "./faults.js";
import { type Answer, errorAnswer } from "./http-io.js";
import type { RouteRequest } from "./router.js";
import type { SimulatorState } from "./state.js";
import type { SimulatedTaskSpec } from "./tasks.js";

/** The new task (already stored and recorded in `creates`), or the 400 to answer. */
export function createTask(
  api: ConversionApi,
  request: RouteRequest,
  state: SimulatorState,
): SimulatedTaskSpec | Answer {
  const { req, body, region, project } = request;
  if (!(req.headers["content-type"] ?? "").toLowerCase().startsWith("application/json")) {
    return errorAnswer(400, "content-type must be application/json");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return errorAnswer(400, "the body must be a JSON object");
  }
  const { resource, type, scale, preview, webhookEndpoint } = body as Record<string, unknown>;
  if (!isHttpUrl(resource)) return errorAnswer(400, "resource must be an http(s) URL");
  if (!isConversionType(type)) return errorAnswer(400, "type must be static or dynamic");
  if (scale !== undefined && !(typeof scale === "number" && scale >= 0.1 && scale <= 3)) {
    return errorAnswer(400, "scale must be a number from 0.1 to 3");
  }
  if (preview !== undefined && typeof preview !== "boolean") return errorAnswer(400, "preview must be a boolean");
  if (api === "projector" && webhookEndpoint !== undefined && !isHttpUrl(webhookEndpoint)) {
    return errorAnswer(400, "webhookEndpoint must be an http(s) URL");
  }
  if (!state.createLimit.take(project)) return tooManyTasksAnswer();
  const { settings } = state;
  const task: SimulatedTaskSpec = {
    // Real task UUIDs are 32 hex digits.
    uuid: randomUUID().replaceAll("-", ""),
    api,
    type,
    resource,
    ...(typeof scale === "number" ? { scale } : {}),
    preview: preview === true,
    ...(api === "projector" && isHttpUrl(webhookEndpoint) ? { webhookEndpoint } : {}),
    region,
    createdAt: settings.now(),
    pageCount: settings.pageCount,
    filesBase: state.filesBase,
    stepMs: settings.slowWhen(resource) ? settings.slowProgressMs : settings.progressMs,
    willFail: settings.failWhen(resource),
  };
  state.tasks.set(task.uuid, task);
  state.creates.push({ at: task.createdAt, resource, uuid: task.uuid, project: project.slice(0, 8) });
  return task;
}

/** The task of `api` with this uuid (the other API's tasks are unknown here). */
export function findTask(
  api: ConversionApi,
  uuid: string | undefined,
  state: SimulatorState,
): SimulatedTaskSpec | undefined {
  const task = state.tasks.get(uuid ?? "");
  return task?.api === api ? task : undefined;
}

export function isAnswer(value: SimulatedTaskSpec | Answer): value is Answer {
  return "status" in value && "body" in value;
}
