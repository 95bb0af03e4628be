/**
 * The conversion backend as the metrics see it: every answer of the follower's
 * queries, the submitter's creates and the cancels, counted by operation and
 * outcome in this one place, whichever of them asked.
 */
import { Failure } from "../failure.js";
import { type ConversionBackend, isOverCapacity } from "./ports.js";

export type BackendOperation = "create" | "query" | "cancel";
export type BackendOutcome = "ok" | "over_capacity" | "not_found" | "error";

export function observedBackend(
  backend: ConversionBackend,
  answered: (operation: BackendOperation, outcome: BackendOutcome) => void,
): ConversionBackend {
  const failed = (operation: BackendOperation) => (e: unknown) => {
    answered(operation, failureOutcome(e));
    throw e;
  };
  return {
    createTask: (request, signal) =>
      backend.createTask(request, signal).then((task) => {
        answered("create", "ok");
        return task;
      }, failed("create")),
    // A task the backend does not know is answered as the state Fail, "not found" (the port's contract).
    queryTask: (ref, signal) =>
      backend.queryTask(ref, signal).then((state) => {
        answered("query", state.failedReason === "not found" ? "not_found" : "ok");
        return state;
      }, failed("query")),
    cancelTask: (ref, signal) =>
      backend.cancelTask(ref, signal).then((state) => {
        answered("cancel", state.failedReason === "not found" ? "not_found" : "ok");
        return state;
      }, failed("cancel")),
  };
}

/** What a failed answer was, by the port's contract. */
function failureOutcome(e: unknown): BackendOutcome {
  if (isOverCapacity(e)) return "over_capacity";
  return e instanceof Failure && e.kind === "not_found" ? "not_found" : "error";
}
