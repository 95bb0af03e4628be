/**
 * The client on the legacy API against the real simulator: `queryTask` in our
 * state shape (pages 1..n, a derived dynamic prefix), unknown tasks, no
 * cancel, and backend trouble on queries.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { TASK_NOT_FOUND_STATE } from "../../src/netless/client.js";
import { FILES_BASE, SIMULATED_FAILURE_REASON, type SimulatorFault } from "../../src/demo/simulator/index.js";
import type { FailureKind } from "../../src/services/failure.js";
import type { ConversionRequest } from "../../src/services/ports.js";
import { type ClientFixture, refOf, requestFor, startClientFixture } from "./client-fixture.js";
import { failureKindOf, failureOf } from "./helpers.js";

let f: ClientFixture;

beforeAll(async () => {
  f = await startClientFixture("legacy");
});
afterEach(() => {
  f.sim.clearFaults();
  f.reset();
});
afterAll(() => f.close());

async function started(request: ConversionRequest) {
  return refOf(await f.client.createTask(request), request);
}

describe("createTask on the legacy API", () => {
  it("posts as before, ignores webhookEndpoint, and answers with the api it used", async () => {
    const request = { ...requestFor("static"), scale: 1.5, webhookEndpoint: "https://app.example.com/hook" };
    const task = await f.client.createTask(request);
    expect(task).toMatchObject({ type: "static", status: "Waiting", api: "legacy" });
    expect(f.lastRequest().path).toBe("/v5/services/conversion/tasks");
    expect(f.lastRequest().body).toStrictEqual({
      resource: request.resourceUrl,
      type: "static",
      preview: false,
      scale: 1.5,
    });
  });

  it("too many tasks → unavailable, retry after 1 s", async () => {
    f.sim.setFault({ kind: "too-many-tasks", times: 1 });
    const failure = await failureOf(f.client.createTask(requestFor("static")));
    expect(failure).toMatchObject({ kind: "unavailable", retryAfterSeconds: 1 });
  });
});

describe("queryTask on the legacy API", () => {
  it("follows a static task to Finished, pages 1..n with their sizes", async () => {
    const ref = await started(requestFor("static"));
    const states = [];
    for (let step = 0; step <= 4; step++) {
      f.at(step);
      states.push(await f.client.queryTask(ref));
    }
    expect(states.map((s) => s.status)).toEqual(["Waiting", "Converting", "Converting", "Converting", "Finished"]);
    expect(states.map((s) => s.percent)).toEqual([0, 0, 33, 67, 100]);
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
    expect(f.lastRequest().path).toBe(`/v5/services/conversion/tasks/${ref.uuid}?type=static`);
  });

  it("a dynamic task: no previews (none asked for), the prefix taken from its pptx:// file names", async () => {
    const ref = await started(requestFor("dynamic", "https://files.example.com/deck.pptx"));
    f.at(4);
    expect(await f.client.queryTask(ref)).toEqual({
      status: "Finished",
      percent: 100,
      pageCount: 3,
      pages: [],
      prefix: `${FILES_BASE}/dynamicConvert`,
    });
  });

  it("a `fail` resource ends in Fail with the backend's reason", async () => {
    const ref = await started(requestFor("dynamic", "https://files.example.com/fail/deck.pptx"));
    f.at(10);
    expect(await f.client.queryTask(ref)).toMatchObject({ status: "Fail", failedReason: SIMULATED_FAILURE_REASON });
  });

  it("unknown tasks, tasks of the other type and tasks of the projector API are Fail, not found", async () => {
    const ref = await started(requestFor("static"));
    expect(await f.client.queryTask({ ...ref, uuid: "0".repeat(32) })).toEqual(TASK_NOT_FOUND_STATE);
    expect(await f.client.queryTask({ ...ref, type: "dynamic" })).toEqual(TASK_NOT_FOUND_STATE);
    expect(await f.client.queryTask({ ...ref, api: "projector" })).toEqual(TASK_NOT_FOUND_STATE);
  });

  const cases: [SimulatorFault, FailureKind][] = [
    [{ kind: "status", status: 500 }, "unavailable"],
    [{ kind: "status", status: 503 }, "unavailable"],
    [{ kind: "status", status: 429 }, "unavailable"],
    [{ kind: "reset" }, "unavailable"],
    [{ kind: "status", status: 401 }, "internal"],
    [{ kind: "garbage" }, "internal"],
    [{ kind: "garbage", body: '{"uuid": "x", "type": "static", "status": "Aborted"}' }, "internal"],
  ];

  it.each(cases)("%o on a query → %s", async (fault, kind) => {
    const ref = await started(requestFor("static"));
    f.sim.setFault({ ...fault, operation: "query", times: 1 });
    expect(await failureKindOf(f.client.queryTask(ref))).toBe(kind);
    expect((await f.client.queryTask(ref)).status).toBe("Waiting");
  });
});

describe("cancelTask on the legacy API", () => {
  it("is failed_precondition, without asking the backend", async () => {
    const ref = await started(requestFor("static"));
    const seen = f.sim.requests().length;
    const failure = await failureOf(f.client.cancelTask(ref));
    expect(failure.kind).toBe("failed_precondition");
    expect(failure.detail).toContain("legacy");
    expect(f.sim.requests()).toHaveLength(seen);
  });
});
