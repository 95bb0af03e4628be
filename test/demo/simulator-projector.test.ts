/**
 * The simulator's projector routes (and what changed on the legacy ones) as a
 * client of the real API would see them, over plain fetch, on a hand-driven
 * clock; faults aimed at one operation; the "too many tasks" answer.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  type ConversionSimulator,
  FILES_BASE,
  LEGACY_TASKS_PATH,
  PROJECTOR_TASKS_PATH,
  SIMULATED_ERROR_CODE,
  SIMULATED_FAILURE_REASON,
  startConversionSimulator,
  TASK_NOT_FOUND_ERROR_CODE,
  TOO_MANY_TASKS_ERROR_CODE,
} from "../../src/demo/simulator/index.js";
import { createSdkToken } from "../../src/netless/sdk-token.js";

const TOKEN = "NETLESSSDK_projector-sim-token";
const KEY = { accessKey: "sim-ak", secretKey: "sim-sk" };
const STEP_MS = 1_000;
const T0 = 1_800_000_000_000;

let clock = T0;
let sim: ConversionSimulator;

beforeAll(async () => {
  sim = await startConversionSimulator({
    credentials: { sdkTokens: [TOKEN], keys: [KEY] },
    progressMs: STEP_MS,
    now: () => clock,
  });
});
afterEach(() => {
  sim.clearFaults();
  clock = T0;
});
afterAll(() => sim.close());

type Json = Record<string, unknown>;

async function call(
  method: string,
  path: string,
  body?: unknown,
  token = TOKEN,
): Promise<{ status: number; json: Json; allow: string | null }> {
  const response = await fetch(sim.url + path, {
    method,
    headers: { token, region: "eu", ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return {
    status: response.status,
    json: text === "" ? {} : (JSON.parse(text) as Json),
    allow: response.headers.get("allow"),
  };
}

const create = async (fields: Json = {}) => {
  const answer = await call("POST", PROJECTOR_TASKS_PATH, {
    resource: "https://files.example.com/a.pdf",
    type: "static",
    ...fields,
  });
  expect(answer.status).toBe(201);
  return String(answer.json.uuid);
};
const query = (uuid: string) => call("GET", `${PROJECTOR_TASKS_PATH}/${uuid}`);
const cancel = (uuid: string, token?: string) => call("DELETE", `${PROJECTOR_TASKS_PATH}/${uuid}`, undefined, token);
const at = (step: number) => {
  clock = T0 + step * STEP_MS + 1;
};

describe("projector: create", () => {
  it("answers 201 {uuid, type, status} and records the task with its api", async () => {
    const answer = await call("POST", PROJECTOR_TASKS_PATH, {
      resource: "https://files.example.com/a.pptx",
      type: "dynamic",
      preview: true,
    });
    expect(answer).toMatchObject({
      status: 201,
      json: { uuid: expect.stringMatching(/^[0-9a-f]{32}$/), type: "dynamic", status: "Waiting" },
    });
    expect(sim.tasks().at(-1)).toMatchObject({
      uuid: answer.json.uuid,
      api: "projector",
      preview: true,
      region: "eu",
      state: { status: "Waiting" },
    });
  });

  it.each([
    ["a webhookEndpoint that is not a URL", { webhookEndpoint: "hooks" }],
    ["no resource", { resource: undefined }],
    ["scale over 3", { scale: 4 }],
  ])("rejects %s with 400", async (_what, fields) => {
    const answer = await call("POST", PROJECTOR_TASKS_PATH, {
      resource: "https://files.example.com/a.pdf",
      type: "static",
      ...fields,
    });
    expect(answer.status).toBe(400);
    expect(answer.json.message).toEqual(expect.any(String));
  });

  it("wants a writer token and a known region, as the legacy API does", async () => {
    const reader = createSdkToken({ ...KEY, role: "reader", now: clock });
    expect(
      (await call("POST", PROJECTOR_TASKS_PATH, { resource: "https://x.example/a.pdf", type: "static" }, reader))
        .status,
    ).toBe(401);
    const response = await fetch(sim.url + PROJECTOR_TASKS_PATH, {
      method: "POST",
      headers: { token: TOKEN, region: "mars", "content-type": "application/json" },
      body: JSON.stringify({ resource: "https://x.example/a.pdf", type: "static" }),
    });
    expect(response.status).toBe(400);
  });

  it("405s other methods with Allow", async () => {
    expect(await call("GET", PROJECTOR_TASKS_PATH)).toMatchObject({ status: 405, allow: "POST" });
    expect(await call("PUT", `${PROJECTOR_TASKS_PATH}/abc`)).toMatchObject({ status: 405, allow: "GET, DELETE" });
  });
});

describe("projector: query", () => {
  it("reports a static task's images page by page, then Finished with a note", async () => {
    const uuid = await create();
    const answers = [];
    for (let step = 0; step <= 4; step++) {
      at(step);
      answers.push((await query(uuid)).json);
    }
    expect(answers.map((a) => [a.status, a.convertedPercentage])).toEqual([
      ["Waiting", 0],
      ["Converting", 0],
      ["Converting", 33],
      ["Converting", 67],
      ["Finished", 100],
    ]);
    expect(answers[4]).toEqual({
      uuid,
      type: "static",
      status: "Finished",
      convertedPercentage: 100,
      pageCount: 3,
      images: Object.fromEntries(
        [1, 2, 3].map((page) => [
          String(page),
          { width: 1280, height: 720, url: `${FILES_BASE}/staticConvert/${uuid}/${page}.png` },
        ]),
      ),
      note: `${FILES_BASE}/staticConvert/${uuid}/note.json`,
    });
  });

  it("reports a dynamic task's prefix, and previews only when they were asked for", async () => {
    const withPreviews = await create({ type: "dynamic", preview: true });
    const without = await create({ type: "dynamic" });
    at(4);
    const answer = (await query(withPreviews)).json;
    expect(answer).toMatchObject({ status: "Finished", prefix: `${FILES_BASE}/dynamicConvert` });
    expect(answer.previews).toEqual({
      "1": `${FILES_BASE}/dynamicConvert/${withPreviews}/preview/1.png`,
      "2": `${FILES_BASE}/dynamicConvert/${withPreviews}/preview/2.png`,
      "3": `${FILES_BASE}/dynamicConvert/${withPreviews}/preview/3.png`,
    });
    expect((await query(without)).json).not.toHaveProperty("previews");
  });

  it("fails a resource whose path says `fail`, with an error code and message and no results", async () => {
    const uuid = await create({ resource: "https://files.example.com/FAIL-me.pdf" });
    at(10);
    const answer = (await query(uuid)).json;
    expect(answer).toMatchObject({
      status: "Fail",
      errorCode: SIMULATED_ERROR_CODE,
      errorMessage: SIMULATED_FAILURE_REASON,
    });
    expect(answer).not.toHaveProperty("images");
    expect(answer).not.toHaveProperty("pageCount");
  });

  it("converts a resource whose path says `slow` over minutes (but only the path counts)", async () => {
    const slow = await create({ resource: "https://files.example.com/slow/deck.pdf" });
    const notSlow = await create({ resource: "https://slow.example.com/deck.pdf?slow=1" });
    at(90);
    expect((await query(slow)).json.status).toBe("Converting");
    expect((await query(notSlow)).json.status).toBe("Finished");
    clock = T0 + 4 * 60_000 + 1;
    expect((await query(slow)).json.status).toBe("Finished");
  });

  it("404s an unknown task with the task-not-found code; each API knows only its own tasks", async () => {
    expect(await query("f".repeat(32))).toMatchObject({ status: 404, json: { errorCode: TASK_NOT_FOUND_ERROR_CODE } });
    const projectorTask = await create();
    expect((await call("GET", `${LEGACY_TASKS_PATH}/${projectorTask}?type=static`)).status).toBe(404);
    const legacy = await call("POST", LEGACY_TASKS_PATH, {
      resource: "https://files.example.com/a.pdf",
      type: "static",
    });
    expect((await query(String(legacy.json.uuid))).status).toBe(404);
  });
});

describe("projector: cancel", () => {
  it("aborts a task in progress where it stands; it stays aborted", async () => {
    const uuid = await create();
    at(3);
    const answer = await cancel(uuid);
    expect(answer).toMatchObject({ status: 200, json: { uuid, status: "Abort", convertedPercentage: 67 } });
    at(20);
    expect((await query(uuid)).json.status).toBe("Abort");
    expect(sim.tasks().find((t) => t.uuid === uuid)?.state.status).toBe("Abort");
    expect(sim.tasks().find((t) => t.uuid === uuid)?.endsAt).toBe(T0 + 3 * STEP_MS + 1); // when it was cancelled
  });

  it("leaves a finished task as it is, 404s an unknown one, and wants a writer token", async () => {
    const uuid = await create();
    at(5);
    expect((await cancel(uuid)).json.status).toBe("Finished");
    expect((await cancel("0".repeat(32))).status).toBe(404);
    const reader = createSdkToken({ ...KEY, role: "reader", now: clock });
    expect((await cancel(uuid, reader)).status).toBe(401);
  });
});

describe("faults aimed at one operation", () => {
  it("hit only that operation's requests, and count only those", async () => {
    const uuid = await create();
    sim.setFault({ kind: "status", status: 503, operation: "query", times: 2 });
    expect((await query(uuid)).status).toBe(503);
    await create(); // not counted
    expect((await query(uuid)).status).toBe(503);
    expect((await query(uuid)).status).toBe(200);
  });

  it("sit beside a fault of the same kind aimed elsewhere, and win over an unaimed one", async () => {
    const uuid = await create();
    sim.setFault({ kind: "status", status: 500 });
    sim.setFault({ kind: "status", status: 502, operation: "cancel" });
    sim.setFault({ kind: "status", status: 503, operation: "query" });
    expect((await query(uuid)).status).toBe(503);
    expect((await cancel(uuid)).status).toBe(502);
    expect(
      (await call("POST", PROJECTOR_TASKS_PATH, { resource: "https://x.example/a.pdf", type: "static" })).status,
    ).toBe(500);
  });

  it("garbage answers the route's success status with the body it was given", async () => {
    const uuid = await create();
    sim.setFault({ kind: "garbage", operation: "cancel", times: 1, body: '{"taskId": "x", "success": true}' });
    expect(await cancel(uuid)).toMatchObject({ status: 200, json: { taskId: "x", success: true } });
  });
});

describe("too many tasks", () => {
  it("answers 400 with the capacity error code, on either API", async () => {
    sim.setFault({ kind: "too-many-tasks", times: 2 });
    const projector = await call("POST", PROJECTOR_TASKS_PATH, { resource: "https://x.example/a.pdf", type: "static" });
    expect(projector).toMatchObject({
      status: 400,
      json: { errorCode: TOO_MANY_TASKS_ERROR_CODE, errorMessage: expect.any(String) },
    });
    const legacy = await call("POST", LEGACY_TASKS_PATH, { resource: "https://x.example/a.pdf", type: "static" });
    expect(legacy).toMatchObject({ status: 400, json: { errorCode: TOO_MANY_TASKS_ERROR_CODE } });
    expect(
      (await call("POST", LEGACY_TASKS_PATH, { resource: "https://x.example/a.pdf", type: "static" })).status,
    ).toBe(201);
  });
});

describe("legacy: dynamic files", () => {
  it("are named pptx://…/dynamicConvert/{uuid}/{n}.slide, with previews when asked for", async () => {
    const created = await call("POST", LEGACY_TASKS_PATH, {
      resource: "https://x.example/a.pptx",
      type: "dynamic",
      preview: true,
    });
    const uuid = String(created.json.uuid);
    at(4);
    const answer = await call("GET", `${LEGACY_TASKS_PATH}/${uuid}?type=dynamic`);
    const files = (answer.json.progress as { convertedFileList: Json[] }).convertedFileList;
    expect(files[0]).toEqual({
      width: 1280,
      height: 720,
      conversionFileUrl: `pptx://convertcdn.example/dynamicConvert/${uuid}/1.slide`,
      preview: `${FILES_BASE}/dynamicConvert/${uuid}/preview/1.png`,
    });
  });
});
