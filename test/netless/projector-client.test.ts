/**
 * The client on the projector API against the real simulator over loopback:
 * what it sends, how it follows a task to its end, cancels it, and what
 * backend trouble on every operation becomes.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { TASK_NOT_FOUND_STATE } from "../../src/netless/client.js";
import {
  FILES_BASE,
  SIMULATED_ERROR_CODE,
  SIMULATED_FAILURE_REASON,
  type SimulatorFault,
} from "../../src/demo/simulator/index.js";
import type { FailureKind } from "../../src/services/failure.js";
import type { ConversionRequest, ConversionState } from "../../src/services/ports.js";
import { type ClientFixture, KEY, refOf, requestFor, SDK_TOKEN, startClientFixture } from "./client-fixture.js";
import { failureKindOf, failureOf } from "./helpers.js";

let f: ClientFixture;

beforeAll(async () => {
  f = await startClientFixture("projector");
});
afterEach(() => {
  f.sim.clearFaults();
  f.reset();
});
afterAll(() => f.close());

/** Creates a task and returns its ref. */
async function started(request: ConversionRequest) {
  return refOf(await f.client.createTask(request), request);
}

describe("createTask on the projector API", () => {
  it("posts a static task with scale (no preview) and answers with the api it used", async () => {
    const request = { ...requestFor("static"), scale: 2 };
    const task = await f.client.createTask(request);

    expect(task).toEqual({
      uuid: expect.stringMatching(/^[0-9a-f]{32}$/),
      type: "static",
      status: "Waiting",
      api: "projector",
    });
    const sent = f.lastRequest();
    expect(sent.method).toBe("POST");
    expect(sent.path).toBe("/v5/projector/tasks");
    expect(sent.headers).toMatchObject({ token: SDK_TOKEN, region: "sg", "content-type": "application/json" });
    expect(sent.body).toStrictEqual({ resource: request.resourceUrl, type: "static", scale: 2 });
  });

  it("asks for previews on a dynamic task, drops scale there, and passes webhookEndpoint on", async () => {
    const webhookEndpoint = "https://app.example.com/hooks/conversion";
    await f.client.createTask({ ...requestFor("dynamic"), scale: 2, webhookEndpoint });
    expect(f.lastRequest().body).toStrictEqual({
      resource: "https://files.example.com/deck.pdf",
      type: "dynamic",
      preview: true,
      webhookEndpoint,
    });
    expect(f.sim.tasks().at(-1)).toMatchObject({ api: "projector", preview: true, webhookEndpoint });
  });

  it("signs a writer token from an access/secret key pair", async () => {
    const task = await f.client.createTask({ ...requestFor("static"), credentials: KEY });
    expect(task.api).toBe("projector");
    expect(f.lastRequest().headers.token).toMatch(/^NETLESSSDK_/);
  });
});

describe("queryTask on the projector API", () => {
  it("follows a static task Waiting → Converting → Finished, pages sorted with their sizes", async () => {
    const ref = await started(requestFor("static"));
    const states: ConversionState[] = [];
    for (let step = 0; step <= 4; step++) {
      f.at(step);
      states.push(await f.client.queryTask(ref));
    }
    expect(states.map((s) => s.status)).toEqual(["Waiting", "Converting", "Converting", "Converting", "Finished"]);
    expect(states.map((s) => s.percent)).toEqual([0, 0, 33, 67, 100]);
    expect(states.map((s) => s.pages.length)).toEqual([0, 0, 1, 2, 3]);
    expect(states[4]).toEqual({
      status: "Finished",
      percent: 100,
      pageCount: 3,
      pages: [1, 2, 3].map((page) => ({
        page,
        url: `${FILES_BASE}/staticConvert/${ref.uuid}/${page}.png`,
        width: 1280,
        height: 720,
      })),
    });
    const sent = f.lastRequest();
    expect(sent.method).toBe("GET");
    expect(sent.path).toBe(`/v5/projector/tasks/${ref.uuid}`);
    expect(sent.headers).toMatchObject({ token: SDK_TOKEN, region: "sg" });
  });

  it("a dynamic task ends with a preview per page and the prefix of its files", async () => {
    const ref = await started(requestFor("dynamic", "https://files.example.com/deck.pptx"));
    f.at(4);
    expect(await f.client.queryTask(ref)).toEqual({
      status: "Finished",
      percent: 100,
      pageCount: 3,
      pages: [1, 2, 3].map((page) => ({
        page,
        previewUrl: `${FILES_BASE}/dynamicConvert/${ref.uuid}/preview/${page}.png`,
      })),
      prefix: `${FILES_BASE}/dynamicConvert`,
    });
  });

  it("a resource whose path says `fail` ends in Fail with the backend's reason and code", async () => {
    const ref = await started(requestFor("static", "https://files.example.com/will-fail.pdf"));
    f.at(10);
    const state = await f.client.queryTask(ref);
    expect(state).toEqual({
      status: "Fail",
      percent: expect.any(Number),
      pages: [],
      failedReason: `${SIMULATED_FAILURE_REASON} (error ${SIMULATED_ERROR_CODE})`,
    });
  });

  it("a task the backend does not know, or one of the legacy API, is the state Fail, not found", async () => {
    const unknown = {
      ...refOf({ uuid: "0".repeat(32), type: "static", status: "Waiting", api: "projector" }, requestFor("static")),
    };
    expect(await f.client.queryTask(unknown)).toEqual(TASK_NOT_FOUND_STATE);
    expect(TASK_NOT_FOUND_STATE).toEqual({ status: "Fail", percent: 0, pages: [], failedReason: "not found" });

    const legacyTask = await f.client.createTask(requestFor("static")); // a projector task …
    const asLegacy = { ...refOf(legacyTask, requestFor("static")), api: "legacy" as const };
    expect(await f.client.queryTask(asLegacy)).toEqual(TASK_NOT_FOUND_STATE); // … is unknown to the legacy API
  });
});

describe("cancelTask on the projector API", () => {
  it("cancels a task in progress: Abort now and from then on", async () => {
    const ref = await started(requestFor("static"));
    f.at(2);
    const after = await f.client.cancelTask(ref);
    expect(after).toMatchObject({ status: "Abort", percent: 33, pageCount: 3 });
    expect(after.pages).toHaveLength(1);
    expect(f.lastRequest()).toMatchObject({ method: "DELETE", path: `/v5/projector/tasks/${ref.uuid}` });
    f.at(10);
    expect((await f.client.queryTask(ref)).status).toBe("Abort");
  });

  it("a finished task stays Finished; an unknown one is Fail, not found", async () => {
    const ref = await started(requestFor("static"));
    f.at(5);
    expect((await f.client.cancelTask(ref)).status).toBe("Finished");
    expect(await f.client.cancelTask({ ...ref, uuid: "f".repeat(32) })).toEqual(TASK_NOT_FOUND_STATE);
  });

  it("takes the docs' {taskId, success} answer too: true → the task's state, false → failed_precondition", async () => {
    const ref = await started(requestFor("static"));
    f.sim.setFault({
      kind: "garbage",
      operation: "cancel",
      times: 1,
      body: JSON.stringify({ taskId: ref.uuid, success: true }),
    });
    expect((await f.client.cancelTask(ref)).status).toBe("Waiting"); // the simulator did not really cancel it
    expect(f.lastRequest().method).toBe("GET");

    f.sim.setFault({
      kind: "garbage",
      operation: "cancel",
      times: 1,
      body: JSON.stringify({ taskId: ref.uuid, success: false }),
    });
    expect(await failureKindOf(f.client.cancelTask(ref))).toBe("failed_precondition");
  });
});

describe("the backend over its capacity", () => {
  it.each<[string, SimulatorFault]>([
    ["too many tasks (error code 2010203)", { kind: "too-many-tasks" }],
    ["429", { kind: "status", status: 429 }],
  ])("%s on create → unavailable, retry after 1 s", async (_what, fault) => {
    f.sim.setFault({ ...fault, times: 1 });
    const failure = await failureOf(f.client.createTask(requestFor("static")));
    expect(failure.kind).toBe("unavailable");
    expect(failure.retryAfterSeconds).toBe(1);
    expect(failure.detail).not.toContain("2010203");
  });
});

describe("backend trouble on query and cancel", () => {
  const cases: [SimulatorFault, FailureKind][] = [
    [{ kind: "status", status: 500 }, "unavailable"],
    [{ kind: "status", status: 502 }, "unavailable"],
    [{ kind: "status", status: 503 }, "unavailable"],
    [{ kind: "status", status: 429 }, "unavailable"],
    [{ kind: "too-many-tasks" }, "unavailable"],
    [{ kind: "reset" }, "unavailable"],
    [{ kind: "status", status: 400 }, "invalid"],
    [{ kind: "status", status: 401 }, "internal"],
    [{ kind: "status", status: 403 }, "internal"],
    [{ kind: "garbage" }, "internal"],
  ];

  it.each(cases)("%o → %s, for the aimed operation only", async (fault, kind) => {
    const ref = await started(requestFor("static"));
    f.sim.setFault({ ...fault, operation: "query" });
    expect(await failureKindOf(f.client.queryTask(ref))).toBe(kind);
    // Create is not aimed at: it still works.
    await expect(f.client.createTask(requestFor("static"))).resolves.toMatchObject({ status: "Waiting" });
    f.sim.clearFaults();
    f.sim.setFault({ ...fault, operation: "cancel" });
    expect(await failureKindOf(f.client.cancelTask(ref))).toBe(kind);
    expect((await f.client.queryTask(ref)).status).toBe("Waiting");
  });

  it("a backend slower than the deadline → deadline_exceeded", async () => {
    const quick = await startClientFixture("projector", 150);
    try {
      const request = requestFor("static");
      const ref = refOf(await quick.client.createTask(request), request);
      quick.sim.setFault({ kind: "slow", delayMs: 2_000, operation: "query", times: 1 });
      expect(await failureKindOf(quick.client.queryTask(ref))).toBe("deadline_exceeded");
      quick.sim.setFault({ kind: "slow", delayMs: 2_000, operation: "cancel", times: 1 });
      expect(await failureKindOf(quick.client.cancelTask(ref))).toBe("deadline_exceeded");
    } finally {
      await quick.close();
    }
  });

  it.each([
    ["an unknown status", { uuid: "a1", status: "Done" }],
    ["a JSON array", []],
    ["pages that are not numbers", { status: "Finished", images: { one: { url: "https://cdn.example/1.png" } } }],
    ["a page URL that is not http(s)", { status: "Finished", previews: { "1": "javascript:alert(1)" } }],
    ["a negative page size", { status: "Finished", images: { "1": { url: "https://cdn.example/1.png", width: -1 } } }],
    ["a percentage as text", { status: "Converting", convertedPercentage: "50%" }],
    ["images as a list", { status: "Finished", images: ["https://cdn.example/1.png"] }],
  ])("an answer with %s → internal", async (_what, body) => {
    const ref = await started(requestFor("static"));
    f.sim.setFault({ kind: "garbage", operation: "query", times: 1, body: JSON.stringify(body) });
    expect(await failureKindOf(f.client.queryTask(ref))).toBe("internal");
  });
});

describe("logs", () => {
  it("never carry the SDK token, a signed token or the secret key", async () => {
    const withKey = { ...requestFor("static"), credentials: KEY };
    const ref = await started(withKey);
    f.sim.setFault({ kind: "status", status: 401, times: 3 });
    await failureOf(f.client.createTask(requestFor("static")));
    await failureOf(f.client.queryTask(ref));
    await failureOf(f.client.cancelTask(ref));
    await f.client.queryTask(ref);
    await f.client.cancelTask(ref);
    const text = f.log.text();
    expect(text).toContain('"op":"cancel"');
    expect(text).not.toContain(SDK_TOKEN);
    expect(text).not.toContain(KEY.secretKey);
    expect(text).not.toContain("NETLESSSDK_");
  });
});
