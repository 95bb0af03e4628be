/**
 * Conversion webhooks end to end (docs/architecture.md, "Following
 * conversions"): real servers on loopback, real Redis, the simulator calling
 * the webhook URL it was given. The followers here poll a minute apart and
 * look for due tasks a minute apart, so a task that ends within seconds was
 * fetched because its webhook woke a follower — and a call that must not wake
 * anything is checked by the backend never being asked. ConvertFile only
 * queues a task; the submitter issues its webhook as it hands it to the
 * backend, so each test waits for that before it looks at the URL.
 */
import { createHmac, randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PROJECTOR_TASKS_PATH } from "../../src/demo/simulator/index.js";
import { type Boardline, startBoardline, startTwin } from "../harness/boardline.js";
import { eventually } from "../harness/eventually.js";
import { parseResponses, raw } from "../harness/http-clients.js";
import { postJson, requestH2 } from "../harness/http.js";
import { redisUrl } from "../harness/redis-url.js";
import { convertBody } from "../harness/request-bodies.js";
import { ROUTES } from "../harness/routes.js";

const SECRET = new Uint8Array(randomBytes(32));
const MINUTE = { firstPollMs: 60_000, maxPollMs: 60_000, tickMs: 60_000 };
const HOOK_PATH = "/v1/whiteboard/conversion-webhook/";
const UNAUTHENTICATED = { error: { code: 401, message: "the webhook signature is missing or wrong" } };

let bl: Boardline;
let twin: Boardline;
let redis: Redis;

beforeAll(async () => {
  bl = await startBoardline({
    store: "redis",
    conversionApi: "projector",
    follow: MINUTE,
    webhooks: { secret: SECRET },
  });
  twin = await startTwin(bl, { conversionApi: "projector", follow: MINUTE, webhooks: { secret: SECRET } });
  redis = new Redis(redisUrl());
});
afterAll(async () => {
  redis?.disconnect();
  await twin?.close();
  await bl?.close();
});

const sign = (id: string, key: Uint8Array = SECRET) => createHmac("sha256", key).update(id).digest("base64url");

/** The task's score in `conv-due`, which holds boardline's ids. */
const dueAt = async (uuid: string) => {
  const score = await redis.zscore(`${bl.prefix}conv-due`, uuid);
  return score === null ? undefined : Number(score);
};

/** A task: boardline's id (what its callers know), and the backend's (what the simulator knows). */
interface Task {
  readonly uuid: string;
  readonly backend: string;
}

/**
 * A new task, once the submitter has handed it to the backend; `slow` ones stay
 * Waiting for a minute, and are due for their first poll a minute on. Each has
 * a resource of its own, so no request reuses another's task.
 */
async function convert(slow = true): Promise<Task> {
  const resource = `https://docs.example.com/${slow ? "slow" : "deck"}-${randomBytes(6).toString("hex")}.pptx`;
  const res = await postJson(bl, ROUTES.convert, convertBody(bl, { resource_url: resource }));
  expect(res.status).toBe(200);
  const answer = JSON.parse(res.text) as { task_uuid: string; status: string; reused: boolean };
  expect(answer).toMatchObject({ status: "Queued", reused: false });
  const created = () => bl.simulator.creates().find((c) => c.resource === resource);
  await eventually(() => created() !== undefined, 5_000, "the submitter to create the task");
  const task = { uuid: answer.task_uuid, backend: created()?.uuid ?? "" };
  // The submitter records the backend's uuid, then makes the task due: a test that reads `conv-due` waits for both.
  if (slow) await eventually(async () => (await dueAt(task.uuid)) !== undefined, 5_000, "the task to be due");
  return task;
}

/** The webhook URL the backend was given for the task, and its id and sig. */
function hookOf(task: Task): { url: string; id: string; sig: string } {
  const url = bl.simulator.tasks().find((t) => t.uuid === task.backend)?.webhookEndpoint ?? "";
  const m =
    /^http:\/\/127\.0\.0\.1:\d+\/v1\/whiteboard\/conversion-webhook\/([A-Za-z0-9_-]{22})\?sig=([A-Za-z0-9_-]{43})$/.exec(
      url,
    );
  if (m === null) throw new Error(`not a webhook URL of the documented form: ${url}`);
  return { url, id: m[1] as string, sig: m[2] as string };
}

/** How often the backend was asked about the task (by its own uuid). */
const queriesOf = (task: Task) =>
  bl.simulator.requests().filter((r) => r.method === "GET" && r.path === `${PROJECTOR_TASKS_PATH}/${task.backend}`)
    .length;

async function call(target: string, init: RequestInit = {}) {
  const res = await fetch(target, { method: "POST", ...init });
  const text = await res.text();
  return { status: res.status, headers: res.headers, json: text === "" ? undefined : (JSON.parse(text) as unknown) };
}

const status = async (uuid: string) => {
  const res = await fetch(`${bl.url}/v1/whiteboard/fileconvert/${uuid}`, {
    headers: { authorization: `Bearer ${await bl.token()}` },
  });
  return ((await res.json()) as { status: string }).status;
};

/** Proves the follower looked for due tasks after everything before it: wakes it for a task of its own. */
async function aLookHappened(): Promise<void> {
  const witness = await convert();
  expect((await call(hookOf(witness).url)).status).toBe(204);
  await eventually(() => queriesOf(witness) > 0, 5_000, "the follower to look");
}

describe("conversion webhooks", () => {
  it("the backend gets <base>/v1/whiteboard/conversion-webhook/<id>?sig=<HMAC of id>, mapped in Redis to boardline's id", async () => {
    const task = await convert();
    const { url, id, sig } = hookOf(task);
    expect(url.startsWith(`${bl.url}${HOOK_PATH}`)).toBe(true);
    expect(sig).toBe(sign(id));
    const creates = bl.simulator.requests().filter((r) => r.method === "POST" && r.path === PROJECTOR_TASKS_PATH);
    expect(creates.map((r) => (r.body as { webhookEndpoint?: string }).webhookEndpoint)).toContain(url);
    // The id stands for the task its callers know, not for the backend's uuid.
    expect(task.backend).not.toBe(task.uuid);
    expect(await redis.get(`${bl.prefix}conv-hook:{${id}}`)).toBe(task.uuid);
    expect(await redis.ttl(`${bl.prefix}conv-hook:{${id}}`)).toBeGreaterThan(604_800 - 10);
    expect(hookOf(await convert()).id).not.toBe(id);
  });

  it("a task ends within seconds, though polls are a minute apart: its webhook woke the follower", async () => {
    const task = await convert(false);
    await eventually(async () => (await status(task.uuid)) === "Finished", 10_000, "the task to be Finished");
    expect(bl.simulator.webhookDeliveries().filter((d) => d.uuid === task.backend)).toEqual([
      expect.objectContaining({ outcome: 204 }),
    ]);
    expect(queriesOf(task)).toBeGreaterThan(0);
    // Saved, announced, then out of the due set: separate steps.
    await eventually(async () => (await dueAt(task.uuid)) === undefined, 5_000, "the task to leave the due set");
    // Called again once ended: 204, and the task is not made due again.
    expect((await call(hookOf(task).url)).status).toBe(204);
    expect(await dueAt(task.uuid)).toBeUndefined();
  });

  it("a forged, missing or misplaced sig is 401 and nothing is queried or moved", async () => {
    const task = await convert();
    const { id, sig } = hookOf(task);
    const otherTask = await convert();
    const other = hookOf(otherTask);
    const before = await dueAt(task.uuid);
    expect(before).toBeGreaterThan(Date.now() + 30_000);
    const flipped = `${sig.slice(0, 5)}${sig[5] === "A" ? "B" : "A"}${sig.slice(6)}`;
    const forged = [
      `${id}`,
      `${id}?sig=`,
      `${id}?sig=${other.sig}`,
      `${id}?sig=${flipped}`,
      `${id}?sig=${sign(id, new Uint8Array(randomBytes(32)))}`,
      `${id}?sig=${sig}&sig=${sig}`,
      `${id}?signature=${sig}`,
      `${other.id}?sig=${sig}`,
    ];
    for (const tail of forged) {
      const res = await call(`${bl.url}${HOOK_PATH}${tail}`, {
        body: "{}",
        headers: { "content-type": "application/json" },
      });
      expect(res.status, tail).toBe(401);
      expect(res.json, tail).toEqual(UNAUTHENTICATED);
    }
    await aLookHappened();
    expect(queriesOf(task)).toBe(0);
    expect(queriesOf(otherTask)).toBe(0);
    expect(await dueAt(task.uuid)).toBe(before);
  });

  it("the body is never believed: the follower asks the backend", async () => {
    const task = await convert();
    const claim = {
      uuid: task.backend,
      status: "Finished",
      convertedPercentage: 100,
      images: { 1: { url: "https://evil.example/1.png" } },
    };
    const res = await call(hookOf(task).url, {
      body: JSON.stringify(claim),
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(204);
    await eventually(() => queriesOf(task) > 0, 5_000, "the backend to be asked");
    await eventually(
      async () => ((await dueAt(task.uuid)) ?? 0) > Date.now() + 30_000,
      5_000,
      "the next poll a minute on",
    );
    expect(await status(task.uuid)).toBe("Waiting");
  });

  it("a signed call for an id boardline does not know is 204 and wakes nothing", async () => {
    const id = randomBytes(16).toString("base64url");
    expect((await call(`${bl.url}${HOOK_PATH}${id}?sig=${sign(id)}`)).status).toBe(204);
    expect(await redis.exists(`${bl.prefix}conv-hook:{${id}}`)).toBe(0);
  });

  it("another instance on the same Redis takes the call", async () => {
    const task = await convert();
    const { url } = hookOf(task);
    const res = await call(url.replace(bl.url, twin.url), {
      body: "anything",
      headers: { "content-type": "text/plain" },
    });
    expect(res.status).toBe(204);
    await eventually(() => queriesOf(task) > 0, 5_000, "the twin's follower to ask the backend");
  });

  it("over HTTP/2 as well", async () => {
    const task = await convert();
    const { url } = hookOf(task);
    const res = await requestH2(bl.url, url.slice(bl.url.length), {
      body: "{}",
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(204);
    await eventually(() => queriesOf(task) > 0, 5_000, "the backend to be asked");
  });

  it("only POST: other methods are 405 with Allow: POST", async () => {
    const { url } = hookOf(await convert());
    for (const method of ["GET", "PUT", "DELETE", "PATCH"]) {
      const res = await call(url, { method });
      expect(res.status, method).toBe(405);
      expect(res.headers.get("allow"), method).toBe("POST");
      expect(res.json, method).toEqual({ error: { code: 405, message: "method not allowed; use POST" } });
    }
    const head = await fetch(url, { method: "HEAD" });
    expect(head.status).toBe(405);
  });

  it("a body over 256 KiB is 413 (the connection closed); one of 256 KiB is taken", async () => {
    const task = await convert();
    const { url } = hookOf(task);
    const target = url.slice(bl.url.length);
    const limit = 256 * 1024;
    const declared = await raw(bl.port);
    declared.socket.write(`POST ${target} HTTP/1.1\r\nHost: x\r\nContent-Length: ${limit + 1}\r\n\r\n`);
    declared.socket.write("x".repeat(limit + 1));
    const chunked = await raw(bl.port);
    chunked.socket.write(`POST ${target} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n`);
    const chunk = "x".repeat(64 * 1024);
    for (let i = 0; i < 5; i++) chunked.socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
    for (const conn of [declared, chunked]) {
      await conn.closed;
      const [res] = parseResponses(conn.received());
      expect(res?.status).toBe(413);
      expect(res?.headers.connection).toBe("close");
      expect(JSON.parse(res?.body ?? "")).toMatchObject({ error: { code: 611 } });
    }
    expect(queriesOf(task)).toBe(0);
    expect((await call(url, { body: "x".repeat(limit) })).status).toBe(204);
    await eventually(() => queriesOf(task) > 0, 5_000, "the backend to be asked");
  });

  it("paths other than one id under the prefix are not webhooks (404)", async () => {
    for (const path of [HOOK_PATH, `${HOOK_PATH}a/b`, HOOK_PATH.slice(0, -1)]) {
      expect((await call(`${bl.url}${path}`)).status, path).toBe(404);
    }
  });
});

describe("without CONVERSION_WEBHOOK_BASE", () => {
  it("no webhook is given to the backend and the route does not exist", async () => {
    const plain = await startBoardline({ store: "memory", conversionApi: "projector" });
    try {
      const res = await postJson(plain, ROUTES.convert, convertBody(plain));
      expect(res.status).toBe(200);
      const create = () => plain.simulator.requests().find((r) => r.method === "POST");
      await eventually(() => create() !== undefined, 5_000, "the submitter to create the task");
      expect(create()?.body).toHaveProperty("resource");
      expect(create()?.body).not.toHaveProperty("webhookEndpoint");
      const id = randomBytes(16).toString("base64url");
      expect((await call(`${plain.url}${HOOK_PATH}${id}?sig=${sign(id)}`)).status).toBe(404);
    } finally {
      await plain.close();
    }
  });
});
