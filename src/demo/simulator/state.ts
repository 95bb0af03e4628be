/**
 * Everything one simulator holds between requests: its settings, its tasks,
 * the requests it has seen, the creates it accepted, its faults, its token
 * check, its creates limit and its webhook calls.
 */
import { CreateLimit } from "./create-limit.js";
import { type TokenCheck, tokenCheck } from "./credentials.js";
import { FaultBoard } from "./faults.js";
import type { RecordedRequest } from "./http-io.js";
import { resolveSettings, type SimulatorOptions, type SimulatorSettings } from "./options.js";
import { type AcceptedCreate, FILES_BASE, type SimulatedTaskSpec } from "./tasks.js";
import { WebhookCaller } from "./webhooks.js";

export interface SimulatorState {
  readonly settings: SimulatorSettings;
  /** Conversion tasks of both APIs, by uuid. */
  readonly tasks: Map<string, SimulatedTaskSpec>;
  readonly recorded: RecordedRequest[];
  /** Every create that made a task, in order (kept when the tasks are forgotten). */
  readonly creates: AcceptedCreate[];
  readonly faults: FaultBoard;
  readonly checkToken: TokenCheck;
  readonly createLimit: CreateLimit;
  /** Calls the webhooks of projector tasks that asked for one. */
  readonly webhooks: WebhookCaller;
  /** Where new tasks' files are named: FILES_BASE, or once listening with `serveFiles`, its own `/files`. */
  filesBase: string;
}

export function createState(options: SimulatorOptions): SimulatorState {
  const settings = resolveSettings(options);
  const tasks = new Map<string, SimulatedTaskSpec>();
  return {
    settings,
    tasks,
    recorded: [],
    creates: [],
    faults: new FaultBoard(),
    checkToken: tokenCheck(options.credentials, settings.now),
    createLimit: new CreateLimit(settings.createsPerSecond, settings.now),
    webhooks: new WebhookCaller(tasks, settings.now),
    filesBase: FILES_BASE,
  };
}
