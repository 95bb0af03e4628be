/**
 * The conversion simulator: a fake Netless conversion backend (projector and
 * legacy APIs) on loopback for the demo, the tests, the bench and the soak.
 * Import it from here.
 */
export { type SimulatorFault, type SimulatorOperation, TOO_MANY_TASKS_ERROR_CODE } from "./faults.js";
export type { RecordedRequest } from "./http-io.js";
export { LEGACY_TASKS_PATH } from "./legacy-routes.js";
export type { SimulatorCredentials, SimulatorOptions } from "./options.js";
export { PROJECTOR_TASKS_PATH, TASK_NOT_FOUND_ERROR_CODE } from "./projector-routes.js";
export { type ConversionSimulator, startConversionSimulator } from "./server.js";
export {
  type AcceptedCreate,
  FILES_BASE,
  SIMULATED_ERROR_CODE,
  SIMULATED_FAILURE_REASON,
  type SimulatedProgress,
  type SimulatedTask,
} from "./tasks.js";
export type { WebhookDelivery } from "./webhooks.js";
