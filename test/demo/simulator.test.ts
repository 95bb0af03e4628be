/**
 * The simulator as a client of the real API would see it, over plain fetch.
 * A hand-driven clock makes progress and token expiry deterministic.
 */
import http from "node:http";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createSdkToken } from "../../src/netless/sdk-token.js";
import {
  type ConversionSimulator,
  SIMULATED_FAILURE_REASON,
  startConversionSimulator,
} from "../../src/demo/simulator/index.js";
import { eventually } from "../netless/helpers.js";

const OPAQUE_TOKEN = "NETLESSSDK_opaque-console-token";
const KEY = { accessKey: "sim-ak", secretKey: "sim-sk" };
const STEP_MS = 1_000;
const T0 = 1_800_000_000_000;

let clock = T0;
let sim: ConversionSimulator;

beforeAll(async () => {
  sim = await startConversionSimulator({
    credentials: { sdkTokens: [OPAQUE_TOKEN], keys: [KEY] },
    progressMs: STEP_MS,
    pageCount: 3,
    failWhen: (resource) => resource.includes("broken"),
    now: () => clock,
  });
});
afterEach(() => {
  sim.clearFaults();
  clock = T0;
});
afterAll(() => sim.close());

const TASKS = "/v5/services/conversion/tasks";
const goodBody = { resource: "https://files.example.com/a.pdf", type: "static", preview: false };

async function call(
  path: string,
  init: { method?: string; token?: string | null; region?: string | null; body?: unknown; contentType?: string } = {},
): Promise<{ status: number; json: Record<string, unknown>; headers: Headers }> {
  const headers: Record<string, string> = {};
  if (init.token !== null) headers.token = init.token ?? OPAQUE_TOKEN;
  if (init.region !== null) headers.region = init.region ?? "cn-hz";
  if (init.body !== undefined) headers["content-type"] = init.contentType ?? "application/json";
  const response = await fetch(sim.url + path, {
    method: init.method ?? (init.body === undefined ? "GET" : "POST"),
    headers,
    ...(init.body === undefined ? {} : { body: typeof init.body === "string" ? init.body : JSON.stringify(init.body) }),
  });
  const text = await response.text();
  return {
    status: response.status,
    json: text === "" ? {} : (JSON.parse(text) as Record<string, unknown>),
    headers: response.headers,
  };
}

const create = (body: unknown = goodBody, token?: string) =>
  call(TASKS, { method: "POST", body, ...(token === undefined ? {} : { token }) });

describe("tokens", () => {
  const signed = (role: "admin" | "writer" | "reader", lifespanMs = 0, secretKey = KEY.secretKey) =>
    createSdkToken({ accessKey: KEY.accessKey, secretKey, role, lifespanMs, now: clock });

  it("accepts a configured opaque token and signed writer/admin tokens", async () => {
    expect((await create()).status).toBe(201);
    expect((await create(goodBody, signed("writer"))).status).toBe(201);
    expect((await create(goodBody, signed("admin", 60_000))).status).toBe(201);
  });

  it("answers 401 {message} for a missing, unknown, forged, expired or reader token", async () => {
    const expired = signed("writer", 1_000);
    clock += 1_000;
    for (const token of [
      null,
      "",
      "some-other-token",
      signed("writer", 0, "wrong-secret"),
      createSdkToken({ accessKey: "stranger", secretKey: "x" }),
      expired,
      signed("reader"),
    ]) {
      const answer = await call(TASKS, { method: "POST", body: goodBody, token });
      expect(answer.status, String(token)).toBe(401);
      expect(answer.json.message).toEqual(expect.any(String));
    }
  });

  it("lets a reader token query a task", async () => {
    const { json } = await create();
    const answer = await call(`${TASKS}/${String(json.uuid)}?type=static`, { token: signed("reader") });
    expect(answer.status).toBe(200);
  });
});

describe("request checks", () => {
  it("requires a known region", async () => {
    expect((await call(TASKS, { method: "POST", body: goodBody, region: null })).status).toBe(400);
    expect((await call(TASKS, { method: "POST", body: goodBody, region: "gb-lon" })).status).toBe(400);
    for (const region of ["us-sv", "sg", "in-mum", "eu", "cn-hz"]) {
      expect((await call(TASKS, { method: "POST", body: goodBody, region })).status).toBe(201);
    }
  });

  it.each([
    ["a resource that is not a URL", { ...goodBody, resource: "a.pdf" }],
    ["an ftp resource", { ...goodBody, resource: "ftp://files.example.com/a.pdf" }],
    ["no resource", { type: "static" }],
    ["an unknown type", { ...goodBody, type: "pdf" }],
    ["scale under 0.1", { ...goodBody, scale: 0.05 }],
    ["scale over 3", { ...goodBody, scale: 3.01 }],
    ["scale as a string", { ...goodBody, scale: "1" }],
    ["preview as a string", { ...goodBody, preview: "no" }],
    ["an array body", [goodBody]],
    ["a body that is not JSON", "resource=https://x"],
  ])("rejects %s with 400", async (_what, body) => {
    const answer = await create(body);
    expect(answer.status).toBe(400);
    expect(answer.json.message).toEqual(expect.any(String));
  });

  it("accepts scale at both ends of 0.1..3", async () => {
    expect((await create({ ...goodBody, scale: 0.1 })).status).toBe(201);
    expect((await create({ ...goodBody, scale: 3 })).status).toBe(201);
  });

  it("wants a JSON content type and a body under 64 KiB", async () => {
    expect((await call(TASKS, { method: "POST", body: goodBody, contentType: "text/plain" })).status).toBe(400);
    const huge = { ...goodBody, padding: "x".repeat(70_000) };
    expect((await create(huge)).status).toBe(413);
  });

  it("404s unknown paths and 405s wrong methods with Allow", async () => {
    expect((await call("/v5/rooms")).status).toBe(404);
    const wrong = await call(TASKS);
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("allow")).toBe("POST");
    expect((await call(`${TASKS}/abc`, { method: "DELETE" })).status).toBe(405);
  });

  it("records what it receives", async () => {
    await call(TASKS, { method: "POST", body: { ...goodBody, scale: 1.5 }, region: "eu" });
    const request = sim.requests().at(-1);
    expect(request).toMatchObject({
      method: "POST",
      path: TASKS,
      headers: { token: OPAQUE_TOKEN, region: "eu", "content-type": "application/json" },
      body: { ...goodBody, scale: 1.5 },
    });
  });
});

describe("task progress", () => {
  const query = (uuid: unknown, type = "static") => call(`${TASKS}/${String(uuid)}?type=${type}`);

  it("moves Waiting → Converting page by page → Finished, as the real API reports it", async () => {
    const created = await create();
    expect(created.status).toBe(201);
    expect(created.json).toEqual({ uuid: expect.stringMatching(/^[0-9a-f]{32}$/), type: "static", status: "Waiting" });
    const { uuid } = created.json;

    const states = [];
    for (let step = 0; step <= 5; step++) {
      clock = T0 + step * STEP_MS + 1;
      const answer = await query(uuid);
      expect(answer.status).toBe(200);
      states.push(answer.json);
    }
    expect(states.map((s) => s.status)).toEqual([
      "Waiting",
      "Converting",
      "Converting",
      "Converting",
      "Finished",
      "Finished",
    ]);
    expect(states.map((s) => (s.progress as Record<string, unknown>).convertedPageSize)).toEqual([0, 0, 1, 2, 3, 3]);
    expect(states[4]).toEqual({
      uuid,
      type: "static",
      status: "Finished",
      progress: {
        totalPageSize: 3,
        convertedPageSize: 3,
        convertedPercentage: 100,
        convertedFileList: [1, 2, 3].map((page) => ({
          width: 1280,
          height: 720,
          conversionFileUrl: expect.stringMatching(new RegExp(`/staticConvert/${String(uuid)}/${page}\\.png$`)),
        })),
      },
    });
    expect(sim.tasks().find((t) => t.uuid === uuid)?.state.status).toBe("Finished");
  });

  it("tells when a task ends: the first instant a query answers its terminal state", async () => {
    const finishing = (await create()).json.uuid;
    const failing = (await create({ ...goodBody, resource: "https://files.example.com/broken.pptx" })).json.uuid;
    const endsAt = (uuid: unknown) => sim.tasks().find((t) => t.uuid === uuid)?.endsAt ?? Number.NaN;
    expect(endsAt(finishing)).toBe(T0 + 4 * STEP_MS); // Waiting, three pages, then Finished
    expect(endsAt(failing)).toBe(T0 + 3 * STEP_MS); // fails where it would convert its second page
    for (const [uuid, end] of [
      [finishing, "Finished"],
      [failing, "Fail"],
    ] as const) {
      clock = endsAt(uuid) - 1;
      expect((await query(uuid)).json.status).toBe("Converting");
      clock = endsAt(uuid);
      expect((await query(uuid)).json.status).toBe(end);
    }
  });

  it("reports currentStep for dynamic conversions only", async () => {
    const { json } = await create({ ...goodBody, type: "dynamic" });
    clock = T0 + STEP_MS + 1;
    const progress = (await query(json.uuid, "dynamic")).json.progress as Record<string, unknown>;
    expect(progress.currentStep).toBe("Extracting");
  });

  it("fails a resource picked by failWhen, with failedReason", async () => {
    const { json } = await create({ ...goodBody, resource: "https://files.example.com/broken.pptx" });
    clock = T0 + 10 * STEP_MS;
    const answer = await query(json.uuid);
    expect(answer.json).toMatchObject({ status: "Fail", failedReason: SIMULATED_FAILURE_REASON });
  });

  it("400s a query without a valid type and 404s unknown tasks or the other type", async () => {
    const { json } = await create();
    expect((await call(`${TASKS}/${String(json.uuid)}`)).status).toBe(400);
    expect((await query(json.uuid, "dynamic")).status).toBe(404);
    expect((await query("f".repeat(32))).status).toBe(404);
    expect((await query("%E0%A4%A")).status).toBe(404);
  });
});

describe("faults", () => {
  it("answers a status fault for the next N requests, then normally", async () => {
    sim.setFault({ kind: "status", status: 503, times: 2 });
    expect((await create()).status).toBe(503);
    expect((await create()).status).toBe(503);
    expect((await create()).status).toBe(201);
  });

  it("answers 429 with Retry-After", async () => {
    sim.setFault({ kind: "status", status: 429, times: 1 });
    const answer = await create();
    expect(answer.status).toBe(429);
    expect(answer.headers.get("retry-after")).toBe("1");
  });

  it("replaces a fault of the same kind, keeps others, and clears them all", async () => {
    sim.setFault({ kind: "status", status: 500 });
    sim.setFault({ kind: "status", status: 502 });
    sim.setFault({ kind: "slow", delayMs: 80 });
    const started = performance.now();
    expect((await create()).status).toBe(502);
    expect(performance.now() - started).toBeGreaterThanOrEqual(75);
    sim.clearFaults();
    expect((await create()).status).toBe(201);
  });

  it("garbage: a success status with a body that is not JSON", async () => {
    sim.setFault({ kind: "garbage", times: 1 });
    const response = await fetch(sim.url + TASKS, {
      method: "POST",
      headers: { token: OPAQUE_TOKEN, region: "sg", "content-type": "application/json" },
      body: JSON.stringify(goodBody),
    });
    expect(response.status).toBe(201);
    const text = await response.text();
    expect(() => JSON.parse(text)).toThrow();
  });

  it("reset: the connection is destroyed instead of answered", async () => {
    sim.setFault({ kind: "reset", times: 1 });
    await expect(create()).rejects.toThrow();
    expect((await create()).status).toBe(201);
  });
});

describe("close", () => {
  it("closes idle keep-alive and in-flight connections at once, and is idempotent", async () => {
    const own = await startConversionSimulator({ credentials: { sdkTokens: [OPAQUE_TOKEN] } });
    const agent = new http.Agent({ keepAlive: true });
    try {
      const get = (path: string) =>
        new Promise<number>((resolve, reject) => {
          http
            .get(`${own.url}${path}`, { agent, headers: { token: OPAQUE_TOKEN, region: "sg" } }, (res) => {
              res.resume();
              res.on("end", () => resolve(res.statusCode ?? 0));
            })
            .on("error", reject);
        });
      expect(await get(`${TASKS}/${"0".repeat(32)}?type=static`)).toBe(404);
      expect(own.openConnections()).toBe(1); // idle, kept alive by the client

      own.setFault({ kind: "slow", delayMs: 60_000 });
      const hanging = get(`${TASKS}/x?type=static`).catch((e: unknown) => e);
      await eventually(() => own.requests().length === 2, 2_000, "the slow request to arrive");

      const started = performance.now();
      await Promise.all([own.close(), own.close()]);
      expect(performance.now() - started).toBeLessThan(1_000);
      expect(await hanging).toBeInstanceOf(Error);
      await eventually(() => own.openConnections() === 0, 2_000, "connections to close");
    } finally {
      agent.destroy();
      await own.close();
    }
  });
});
