/**
 * What an answer other than the expected success means: the backend over its
 * capacity, a task it does not know, or a failure of the kind the error table
 * expects. Backend bodies never reach the caller; only their error codes are read.
 */
import type { Logger } from "../log.js";
import { Failure } from "../services/failure.js";
import type { WhiteboardCredentials } from "../services/ports.js";
import { parseObject } from "./json-values.js";
import { kindOf, type NetlessAnswer, type Operation } from "./http.js";

/** "the number of tasks exceeds limit": the account's conversions per second are used up. */
export const TOO_MANY_TASKS_CODE = "2010203";
/** "task not found" (the projector API has two codes for it). */
export const TASK_NOT_FOUND_CODES: readonly string[] = ["2010605", "2011301"];
/** How long a caller should wait when the backend is over its capacity (it converts one request a second). */
const CAPACITY_RETRY_SECONDS = 1;

/** The `errorCode` (or `code`) and `errorMessage` (or `message`) of an error answer, when it has them. */
function errorFields(body: string): { code: string | undefined; message: string | undefined } {
  const value = parseObject(body);
  const code = value?.errorCode ?? value?.code;
  const message = value?.errorMessage ?? value?.message;
  return {
    code: typeof code === "string" || typeof code === "number" ? String(code) : undefined,
    message: typeof message === "string" ? message : undefined,
  };
}

/** 429, or an error answer with the "too many tasks" code. */
export function isOverCapacity(answer: NetlessAnswer): boolean {
  if (answer.status === 429) return true;
  return answer.status >= 400 && errorFields(answer.body).code === TOO_MANY_TASKS_CODE;
}

/** 404, or an error answer that says "task not found" (by code or in words). */
export function isTaskNotFound(answer: NetlessAnswer): boolean {
  if (answer.status === 404) return true;
  if (answer.status < 400 || answer.status >= 500) return false;
  const { code, message } = errorFields(answer.body);
  return (code !== undefined && TASK_NOT_FOUND_CODES.includes(code)) || /task not found/i.test(message ?? "");
}

/** The failure for an answer that is neither the success nor an unknown task. */
export function failureForAnswer(
  op: Operation,
  answer: NetlessAnswer,
  credentials: WhiteboardCredentials,
  logger: Logger,
): Failure {
  const { status } = answer;
  const cause = new Error(`conversion backend answered HTTP ${status}`);
  if (isOverCapacity(answer)) {
    logger.warn({ op, status }, "conversion backend over its capacity");
    return new Failure("unavailable", {
      detail: "the conversion backend is busy, retry later",
      retryAfterSeconds: CAPACITY_RETRY_SECONDS,
      cause,
    });
  }
  if (status === 401 || status === 403) {
    // Our stored credentials are wrong or lack the writer role: no caller can
    // fix that, an operator must. Say which key, never the token or secret.
    logger.error(
      {
        op,
        status,
        credentials: kindOf(credentials),
        ...("accessKey" in credentials ? { accessKey: credentials.accessKey } : {}),
      },
      "conversion backend refused our whiteboard credentials; check the project's sdk_token or access_key/secret_key",
    );
    return new Failure("internal", { cause });
  }
  if (status >= 500) {
    logger.warn({ op, status }, "conversion backend unavailable");
    return new Failure("unavailable", { detail: "the conversion backend is unavailable", cause });
  }
  if (status === 400) {
    logger.info({ op, status }, "conversion backend rejected the request");
    return new Failure("invalid", {
      // Appended to the 611 message after ": ", so it names the field first.
      detail:
        op === "create"
          ? "resource_url was rejected by the conversion backend"
          : "the task query was rejected by the conversion backend",
      cause,
    });
  }
  if (status === 404 && op !== "create") {
    return new Failure("not_found", { detail: "no such conversion task", cause });
  }
  logger.error({ op, status }, "conversion backend answered with an unexpected status");
  return new Failure("internal", { cause });
}

/** An answer whose body we cannot read: a backend fault. */
export function unreadableAnswer(op: Operation, status: number, logger: Logger): Failure {
  logger.error({ op, status }, "conversion backend sent an unreadable task");
  return new Failure("internal", { cause: new Error("unreadable answer from the conversion backend") });
}
