/**
 * The conversion simulator: a fake Netless conversion backend on loopback for
 * the demo, the tests, the bench and the soak. Import it from here.
 */
export type { SimulatorFault } from "./faults.js";
export type { RecordedRequest } from "./http-io.js";
export type { SimulatorCredentials, SimulatorOptions } from "./options.js";
export { type ConversionSimulator, startConversionSimulator } from "./server.js";
export { SIMULATED_FAILURE_REASON, type SimulatedTask } from "./tasks.js";
