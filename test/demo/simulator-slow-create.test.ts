/**
 * A "slow" fault holds back the simulator's answer, not its work: a create
 * answered late made its task when it arrived, so a client that gives up (or
 * dies) meanwhile leaves the task behind, as with the real backend. With a fault
 * that refuses the request, the delay only delays the refusal.
 */
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import {
  type ConversionSimulator,
  LEGACY_TASKS_PATH,
  PROJECTOR_TASKS_PATH,
  startConversionSimulator,
} from "../../src/demo/simulator/index.js";
import { eventually } from "../netless/helpers.js";

const TOKEN = "NETLESSSDK_slow-create-token";
const T0 = 1_800_000_000_000;

let clock = T0;
let sim: ConversionSimulator;

beforeAll(async () => {
  sim = await startConversionSimulator({ credentials: { sdkTokens: [TOKEN] }, now: () => clock });
});
afterEach(() => {
  sim.clearFaults();
  sim.forgetTasks();
  clock = T0;
});
afterAll(() => sim.close());

function post(path: string, resource: string, signal?: AbortSignal): Promise<Response> {
  return fetch(sim.url + path, {
    method: "POST",
    headers: { token: TOKEN, region: "us-sv", "content-type": "application/json" },
    body: JSON.stringify({ resource, type: "static" }),
    ...(signal === undefined ? {} : { signal }),
  });
}

it.each([
  ["projector", PROJECTOR_TASKS_PATH],
  ["legacy", LEGACY_TASKS_PATH],
])(
  "%s: a client gone during a slow create's delay leaves the task, made when the request arrived",
  async (api, path) => {
    const resource = `https://files.example.com/${api}/gone.pdf`;
    sim.setFault({ kind: "slow", delayMs: 60_000, operation: "create", times: 1 });
    const client = new AbortController();
    const answer = post(path, resource, client.signal).catch((e: unknown) => e);
    await eventually(() => sim.tasks().length === 1, 2_000, "the task to be made before the answer");
    clock = T0 + 30_000;
    client.abort();
    expect(await answer).toBeInstanceOf(Error);
    await eventually(() => sim.openConnections() === 0, 2_000, "the client's connection to close");

    const [task] = sim.tasks();
    expect(task).toMatchObject({ resource, createdAt: T0 });
    expect(sim.creates().at(-1)).toEqual({ at: T0, resource, uuid: task?.uuid, project: expect.any(String) });
  },
);

it("a slow create that is waited for answers the task it made on arrival", async () => {
  sim.setFault({ kind: "slow", delayMs: 100, operation: "create", times: 1 });
  const started = performance.now();
  const answer = await post(PROJECTOR_TASKS_PATH, "https://files.example.com/late.pdf");
  expect(performance.now() - started).toBeGreaterThanOrEqual(95);
  expect(answer.status).toBe(201);
  const { uuid } = (await answer.json()) as { uuid: string };
  expect(sim.tasks().map((task) => task.uuid)).toEqual([uuid]);
});

it("slow with a refusing fault: the refusal comes late and nothing is made", async () => {
  sim.setFault({ kind: "slow", delayMs: 50, operation: "create", times: 1 });
  sim.setFault({ kind: "status", status: 503, operation: "create", times: 1 });
  const creates = sim.creates().length;
  expect((await post(PROJECTOR_TASKS_PATH, "https://files.example.com/refused.pdf")).status).toBe(503);
  expect(sim.tasks()).toEqual([]);
  expect(sim.creates()).toHaveLength(creates);
});
