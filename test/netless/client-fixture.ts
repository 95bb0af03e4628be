/**
 * A conversion simulator on a hand-driven clock and a real client against it,
 * for the suites that follow tasks through their states: `at(step)` moves the
 * clock to just after the start of a task's progress step `step`.
 */
import { NetlessConversionClient } from "../../src/netless/client.js";
import { type ConversionSimulator, startConversionSimulator } from "../../src/demo/simulator/index.js";
import type { ConversionApi, ConversionRequest, ConversionTask, ConversionTaskRef } from "../../src/services/ports.js";
import { capturingLogger } from "../harness/capturing-logger.js";

export const SDK_TOKEN = "NETLESSSDK_fixture-opaque-token";
export const KEY = { accessKey: "fixture-ak", secretKey: "fixture-secret-key-never-logged" };
export const STEP_MS = 1_000;

export interface ClientFixture {
  readonly sim: ConversionSimulator;
  readonly client: NetlessConversionClient;
  readonly log: ReturnType<typeof capturingLogger>;
  /** Sets the clock to `step` progress steps (plus 1 ms) after the clock's start. */
  at(step: number): void;
  /** Back to the start. */
  reset(): void;
  /** The last request the simulator saw. */
  lastRequest(): ReturnType<ConversionSimulator["requests"]>[number];
  close(): Promise<void>;
}

export async function startClientFixture(api: ConversionApi, timeoutMs = 2_000): Promise<ClientFixture> {
  const start = Date.now();
  let clock = start;
  const sim = await startConversionSimulator({
    credentials: { sdkTokens: [SDK_TOKEN], keys: [KEY] },
    progressMs: STEP_MS,
    now: () => clock,
  });
  const log = capturingLogger();
  const client = new NetlessConversionClient({ baseUrl: sim.url, timeoutMs, api, logger: log.logger });
  return {
    sim,
    client,
    log,
    at: (step) => {
      clock = start + step * STEP_MS + 1;
    },
    reset: () => {
      clock = start;
    },
    lastRequest: () => {
      const request = sim.requests().at(-1);
      if (request === undefined) throw new Error("the simulator saw no request");
      return request;
    },
    close: async () => {
      client.close();
      await sim.close();
    },
  };
}

/** A request for `resource` (default a plain PDF) with the fixture's SDK token, in region sg. */
export function requestFor(type: ConversionRequest["type"], resource = "https://files.example.com/deck.pdf") {
  return {
    resourceUrl: resource,
    type,
    region: "sg",
    credentials: { sdkToken: SDK_TOKEN },
  } satisfies ConversionRequest;
}

/** What `queryTask`/`cancelTask` need to ask about a task created with `request`. */
export function refOf(task: ConversionTask, request: ConversionRequest): ConversionTaskRef {
  return { uuid: task.uuid, type: task.type, api: task.api, region: request.region, credentials: request.credentials };
}
