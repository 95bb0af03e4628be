/**
 * The simulator's creates limit (`createsPerSecond`), as the real backend's
 * "one conversion a second per project": a token bucket per project (an opaque
 * token, or a signed token's access key) on the simulator's clock, here a
 * hand-driven one so nothing depends on timing. Over the limit, a create is
 * answered as the "too many tasks" fault answers and makes nothing.
 */
import { createHash } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  type ConversionSimulator,
  LEGACY_TASKS_PATH,
  PROJECTOR_TASKS_PATH,
  type SimulatorOptions,
  startConversionSimulator,
  TOO_MANY_TASKS_ERROR_CODE,
} from "../../src/demo/simulator/index.js";
import { createSdkToken } from "../../src/netless/sdk-token.js";
import { eventually } from "../netless/helpers.js";

const TOKEN = "NETLESSSDK_limit-opaque-token";
const OTHER_TOKEN = "NETLESSSDK_limit-other-token";
const KEY = { accessKey: "limit-ak", secretKey: "limit-sk" };
const PER_SECOND = 2;
const T0 = 1_800_000_000_000;

let clock = T0;
const sims: ConversionSimulator[] = [];
let sim: ConversionSimulator;

async function start(options: Partial<SimulatorOptions> = {}): Promise<ConversionSimulator> {
  const started = await startConversionSimulator({
    credentials: { sdkTokens: [TOKEN, OTHER_TOKEN], keys: [KEY] },
    now: () => clock,
    ...options,
  });
  sims.push(started);
  return started;
}

beforeAll(async () => {
  sim = await start({ createsPerSecond: PER_SECOND });
});
afterEach(() => {
  sim.clearFaults();
  sim.forgetTasks();
  // Far enough on that every bucket is full again (the clock only moves forward here).
  clock += 3_600_000;
});
afterAll(() => Promise.all(sims.map((s) => s.close())));

type Json = Record<string, unknown>;
const signed = (role: "writer" | "admin" | "reader" = "writer") => createSdkToken({ ...KEY, role, now: clock });

async function create(
  options: { token?: string; path?: string; body?: unknown; region?: string; on?: ConversionSimulator } = {},
): Promise<{ status: number; json: Json }> {
  const body = options.body ?? { resource: `https://files.example.com/${crypto.randomUUID()}.pdf`, type: "static" };
  const response = await fetch((options.on ?? sim).url + (options.path ?? PROJECTOR_TASKS_PATH), {
    method: "POST",
    headers: { token: options.token ?? TOKEN, region: options.region ?? "cn-hz", "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, json: text === "" ? {} : (JSON.parse(text) as Json) };
}

const statuses = (answers: readonly { status: number }[]) => answers.map((a) => a.status).sort();
const label = (identity: string) => createHash("sha256").update(identity).digest("hex").slice(0, 8);

describe("over the limit", () => {
  it("of N creates at once with one token, createsPerSecond are accepted; the rest get 2010203 and make nothing", async () => {
    const tasks = sim.tasks().length;
    const creates = sim.creates().length;
    const refused = sim.refusedCreates();
    const answers = await Promise.all(Array.from({ length: 7 }, () => create()));

    expect(statuses(answers)).toEqual([201, 201, 400, 400, 400, 400, 400]);
    const message = "the number of tasks exceeds limit";
    for (const answer of answers.filter((a) => a.status === 400)) {
      expect(answer.json).toEqual({ message, errorCode: TOO_MANY_TASKS_ERROR_CODE, errorMessage: message });
    }
    expect(sim.tasks()).toHaveLength(tasks + PER_SECOND);
    expect(sim.creates()).toHaveLength(creates + PER_SECOND);
    expect(sim.refusedCreates()).toBe(refused + 5);
  });

  it("is answered just as the too-many-tasks fault is, on both APIs, which share the project's bucket", async () => {
    sim.setFault({ kind: "too-many-tasks", operation: "create", times: 1 });
    const byFault = await create();
    expect((await create()).status).toBe(201);
    expect((await create({ path: LEGACY_TASKS_PATH })).status).toBe(201);
    const byLimit = await create({ path: LEGACY_TASKS_PATH });
    expect(byLimit).toEqual(byFault);
    expect(await create()).toEqual(byFault);
  });

  it("records each accepted create with its time, resource, task and a project label, never the token", async () => {
    const before = sim.creates().length;
    const resource = "https://files.example.com/recorded.pdf";
    const made = await create({ body: { resource, type: "dynamic" } });
    await create({ token: signed() });
    expect(sim.creates().slice(before)).toEqual([
      { at: clock, resource, uuid: made.json.uuid, project: label(TOKEN) },
      { at: clock, resource: expect.any(String), uuid: expect.any(String), project: label(KEY.accessKey) },
    ]);
    expect(JSON.stringify(sim.creates())).not.toContain(TOKEN);
  });
});

describe("a slow create", () => {
  it("takes its token on arrival, not when it is answered", async () => {
    const tasks = sim.tasks().length;
    sim.setFault({ kind: "slow", delayMs: 300, operation: "create", times: 1 });
    const late = create();
    await eventually(() => sim.tasks().length > tasks, 2_000, "the slow create to make its task");
    expect(statuses(await Promise.all([create(), create()]))).toEqual([201, 400]);
    expect((await late).status).toBe(201);
  });
});

describe("per project", () => {
  it("two opaque tokens have a bucket each", async () => {
    const answers = await Promise.all(
      [TOKEN, TOKEN, TOKEN, OTHER_TOKEN, OTHER_TOKEN, OTHER_TOKEN].map((t) => create({ token: t })),
    );
    expect(statuses(answers.slice(0, 3))).toEqual([201, 201, 400]);
    expect(statuses(answers.slice(3))).toEqual([201, 201, 400]);
  });

  it("signed tokens of one access key share its bucket, apart from an opaque token's", async () => {
    const answers = await Promise.all(
      [signed("writer"), signed("admin"), signed("writer")].map((t) => create({ token: t })),
    );
    expect(statuses(answers)).toEqual([201, 201, 400]);
    expect((await create()).status).toBe(201);
  });
});

describe("refill", () => {
  it("refills createsPerSecond a second on the simulator's clock, up to createsPerSecond", async () => {
    expect(statuses(await Promise.all([create(), create(), create()]))).toEqual([201, 201, 400]);
    clock += 1_000 / PER_SECOND - 1;
    expect((await create()).status).toBe(400);
    clock += 1;
    expect((await create()).status).toBe(201);
    expect((await create()).status).toBe(400);
    clock += 60_000;
    expect(statuses(await Promise.all([create(), create(), create()]))).toEqual([201, 201, 400]);
  });

  it("a fraction of one a second allows a create every so many seconds", async () => {
    const slow = await start({ createsPerSecond: 0.5 });
    expect((await create({ on: slow })).status).toBe(201);
    clock += 1_999;
    expect((await create({ on: slow })).status).toBe(400);
    clock += 1;
    expect((await create({ on: slow })).status).toBe(201);
  });
});

describe("what takes no token", () => {
  it("a create refused for its token, region, body or a fault; a query; a cancel", async () => {
    sim.setFault({ kind: "status", status: 503, operation: "create", times: 1 });
    expect((await create()).status).toBe(503);
    sim.setFault({ kind: "too-many-tasks", operation: "create", times: 1 });
    expect((await create()).status).toBe(400);
    expect((await create({ token: "NETLESSSDK_unknown" })).status).toBe(401);
    expect((await create({ token: signed("reader") })).status).toBe(401);
    expect((await create({ region: "mars" })).status).toBe(400);
    expect((await create({ body: { resource: "ftp://x", type: "static" } })).status).toBe(400);
    expect((await create({ body: "not json" })).status).toBe(400);
    const refused = sim.refusedCreates();

    const { json } = await create();
    const task = `${PROJECTOR_TASKS_PATH}/${String(json.uuid)}`;
    const headers = { token: TOKEN, region: "cn-hz" };
    for (let i = 0; i < 5; i++) expect((await fetch(sim.url + task, { headers })).status).toBe(200);
    expect((await fetch(sim.url + task, { method: "DELETE", headers })).status).toBe(200);
    expect((await create()).status).toBe(201);
    expect((await create()).status).toBe(400);
    expect(sim.refusedCreates()).toBe(refused + 1);
  });
});

describe("options", () => {
  it("is unlimited by default and with Infinity", async () => {
    for (const unlimited of [await start(), await start({ createsPerSecond: Number.POSITIVE_INFINITY })]) {
      const answers = await Promise.all(Array.from({ length: 20 }, () => create({ on: unlimited })));
      expect(answers.every((a) => a.status === 201)).toBe(true);
      expect(unlimited.creates()).toHaveLength(20);
      expect(unlimited.refusedCreates()).toBe(0);
    }
  });

  it.each([0, -1, Number.NaN])("refuses createsPerSecond %s", async (createsPerSecond) => {
    await expect(start({ createsPerSecond })).rejects.toThrow(RangeError);
  });
});
