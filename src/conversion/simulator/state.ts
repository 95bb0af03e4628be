/**
 * Everything one simulator holds between requests: its settings, its tasks,
 * the requests it has seen, its faults and its token check.
 */
import { type TokenCheck, tokenCheck } from "./credentials.js";
import { FaultBoard } from "./faults.js";
import type { RecordedRequest } from "./http-io.js";
import { resolveSettings, type SimulatorOptions, type SimulatorSettings } from "./options.js";
import type { SimulatedTaskSpec } from "./tasks.js";

export interface SimulatorState {
  readonly settings: SimulatorSettings;
  /** Conversion tasks of both APIs, by uuid. */
  readonly tasks: Map<string, SimulatedTaskSpec>;
  readonly recorded: RecordedRequest[];
  readonly faults: FaultBoard;
  readonly refuseToken: TokenCheck;
}

export function createState(options: SimulatorOptions): SimulatorState {
  const settings = resolveSettings(options);
  return {
    settings,
    tasks: new Map(),
    recorded: [],
    faults: new FaultBoard(),
    refuseToken: tokenCheck(options.credentials, settings.now),
  };
}
