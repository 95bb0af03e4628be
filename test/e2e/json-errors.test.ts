/**
 * The error table (docs/architecture.md, "Error table") on both JSON routes, over fetch against a
 * real server (Redis store, conversion simulator). Every failure is checked
 * for the HTTP status, the exact body shape, the code and the message, and
 * that it changed nothing: every key under the server's prefix reads the same
 * afterwards and the conversion backend saw no request unless it had to.
 * ConvertFile answers before the backend is asked, so the backend's faults
 * are checked where a caller meets them: on the task (the GetConversion
 * route), and on the CancelConversion route, which still asks the backend.
 */
import { randomBytes } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import type { SimulatorFault } from "../../src/demo/simulator/index.js";
import { MissLimitGuard } from "../../src/services/passphrase-guard.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { eventually } from "../harness/eventually.js";
import { type HttpAnswer, type PostOptions, postJson, postJsonH2, requestH2 } from "../harness/http.js";
import { conversionKeys, type RedisSnapshot, redisSnapshot } from "../harness/redis-state.js";
import { startRedisServer } from "../harness/redis-server.js";
import { convertBody, muteBody } from "../harness/request-bodies.js";
import { type Op, OPS, ROUTES } from "../harness/routes.js";
import { expectError, expectNoLeak, INVALID_PREFIX, unauthenticatedCases, without } from "./helpers/contract.js";

const MAX_BODY_BYTES = 4096;
const TIMEOUT_MS = 400;

let bl: Boardline;
beforeAll(async () => {
  // No follower polls during this file: its "nothing changed" snapshots would see it work.
  bl = await startBoardline({
    maxBodyBytes: MAX_BODY_BYTES,
    conversionTimeoutMs: TIMEOUT_MS,
    follow: { firstPollMs: 600_000 },
  });
  // Some state to be left alone by every failure below.
  expect((await postJson(bl, ROUTES.mute, muteBody(bl, { uid: "seeded", mute: true }))).status).toBe(200);
});
afterAll(async () => {
  await bl?.close();
});
afterEach(() => {
  bl.simulator.clearFaults();
});

/** The keys of a conversion on its way to the backend: its queue, the project's pace and lease, the index of queues. */
const SUBMITTING = /:conv-(queue|queues|pace|queue-lease)$/;

/**
 * A snapshot of `at`'s keys once no conversion is on its way to the backend: a
 * request accepted by an earlier test is submitted after its answer, and the
 * pace it leaves runs out on its own.
 */
async function quietSnapshot(at: Boardline = bl): Promise<RedisSnapshot> {
  let snapshot: RedisSnapshot = {};
  await eventually(
    async () => {
      snapshot = await redisSnapshot(at);
      return Object.keys(snapshot).every((k) => !SUBMITTING.test(k));
    },
    5_000,
    "the accepted conversions to be submitted",
  );
  return snapshot;
}

/**
 * Sends one failing request and checks the answer and that nothing changed:
 * not a key under the prefix, and no backend request unless `backend` says one
 * was expected.
 */
async function failing(path: string, body: unknown, o: PostOptions & { backend?: number } = {}): Promise<HttpAnswer> {
  const before = await quietSnapshot();
  const backendBefore = bl.simulator.requests().length;
  const res = await postJson(bl, path, body, o);
  expect(await redisSnapshot(bl)).toEqual(before);
  expect(bl.simulator.requests().length - backendBefore).toBe(o.backend ?? 0);
  return res;
}

const bodyOf = (op: Op, over: Record<string, unknown> = {}) =>
  op === "mute" ? muteBody(bl, over) : convertBody(bl, over);

describe.each(OPS)("%s: bodies that are not a JSON object → 400/611", (op) => {
  test.each([
    ["not JSON", '{"uid": '],
    ["empty body", ""],
    ["JSON array", "[]"],
    ["JSON array of an object", '[{"uid":"u"}]'],
    ["JSON null", "null"],
    ["JSON number", "42"],
    ["JSON string", '"hello"'],
    ["JSON true", "true"],
    ["trailing garbage", '{"uid":"u"} x'],
  ])("%s", async (_name, text) => {
    expectError(await failing(ROUTES[op], text), 400, 611);
  });

  test("invalid UTF-8", async () => {
    const bytes = new Uint8Array([0x7b, 0x22, 0x75, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]);
    expectError(await failing(ROUTES[op], bytes), 400, 611);
  });
});

describe("mute: wrong types and field rules → 400/611", () => {
  test.each<[string, Record<string, unknown>]>([
    ["uid a number", { uid: 5 }],
    ["uid an object", { uid: { a: 1 } }],
    ["uid an array", { uid: ["u"] }],
    ["passphrase a number", { passphrase: 1234 }],
    ["mute a string", { mute: "yes" }],
    ["mute a number", { mute: 1 }],
    ["mute an object", { mute: {} }],
  ])("%s", async (_name, over) => {
    const message = expectError(await failing(ROUTES.mute, muteBody(bl, over)), 400, 611);
    expect(message).toMatch(new RegExp(`^${INVALID_PREFIX}: ${Object.keys(over)[0]}: `));
  });

  test.each<[string, Record<string, unknown>]>([
    ["uid missing", { uid: undefined }],
    ["uid empty", { uid: "" }],
    ["uid of 256 characters", { uid: "u".repeat(256) }],
    ["uid of 256 non-BMP characters", { uid: "😀".repeat(256) }],
    ["uid with NUL", { uid: "a\u0000b" }],
    ["uid with a newline", { uid: "a\nb" }],
    ["uid with a tab", { uid: "\tab" }],
    ["uid with DEL", { uid: "ab\u007f" }],
    ["uid with a C1 control (NEL)", { uid: "a\u0085b" }],
    ["passphrase missing", { passphrase: undefined }],
    ["passphrase empty", { passphrase: "" }],
    ["passphrase of 257 characters", { passphrase: "p".repeat(257) }],
    ["mute null (absent)", { mute: null }],
  ])("%s", async (name, over) => {
    // JSON.stringify leaves out the undefined ones: a missing field.
    const body = muteBody(bl, over);
    const message = expectError(await failing(ROUTES.mute, body), 400, 611);
    const field = name.split(" ")[0] as string;
    expect(message).toMatch(new RegExp(`^${INVALID_PREFIX}: ${field}: `));
  });

  test("mute missing → 611 and nothing written (it never silently unmutes)", async () => {
    // "seeded" is muted; a body without `mute` must not touch it.
    const message = expectError(await failing(ROUTES.mute, without(muteBody(bl, { uid: "seeded" }), "mute")), 400, 611);
    expect(message).toMatch(new RegExp(`^${INVALID_PREFIX}: mute: `));
    expect(await bl.store.getMuteState(bl.world.project, bl.world.channel)).toMatchObject({ seeded: true });
  });

  test("unknown fields do not rescue an invalid body", async () => {
    expectError(await failing(ROUTES.mute, { extra: 1, passphrase: bl.world.hostPassphrase, mute: true }), 400, 611);
  });
});

describe("fileconvert: wrong types and field rules → 400/611", () => {
  test.each<[string, Record<string, unknown>]>([
    ["resource_url a number", { resource_url: 1 }],
    ["passphrase an array", { passphrase: ["a"] }],
    ["conversion_type a number", { conversion_type: 3 }],
    ["conversion_type a bool", { conversion_type: true }],
    ["conversion_scale a word", { conversion_scale: "big" }],
    ["conversion_scale an object", { conversion_scale: {} }],
    ["conversion_scale a bool", { conversion_scale: true }],
  ])("%s", async (_name, over) => {
    const message = expectError(await failing(ROUTES.convert, convertBody(bl, over)), 400, 611);
    expect(message).toMatch(new RegExp(`^${INVALID_PREFIX}: ${Object.keys(over)[0]}: `));
  });

  test.each<[string, Record<string, unknown>]>([
    ["resource_url missing", { resource_url: undefined }],
    ["resource_url empty", { resource_url: "" }],
    ["resource_url relative (path)", { resource_url: "/files/deck.pptx" }],
    ["resource_url relative (name)", { resource_url: "deck.pptx" }],
    ["resource_url scheme-relative", { resource_url: "//docs.example.com/deck.pptx" }],
    ["resource_url ftp", { resource_url: "ftp://docs.example.com/deck.pptx" }],
    ["resource_url file", { resource_url: "file:///etc/passwd" }],
    ["resource_url javascript", { resource_url: "javascript:alert(1)" }],
    ["resource_url not a URL", { resource_url: "https://exa mple.com/deck.pptx" }],
    ["resource_url of 2049 characters", { resource_url: `https://docs.example.com/${"a".repeat(2049 - 25)}` }],
    ["passphrase missing", { passphrase: undefined }],
    ["passphrase empty", { passphrase: "" }],
    ["passphrase of 257 characters", { passphrase: "p".repeat(257) }],
    ["conversion_type missing", { conversion_type: undefined }],
    ["conversion_type empty", { conversion_type: "" }],
    ["conversion_type upper case", { conversion_type: "STATIC" }],
    ["conversion_type pdf", { conversion_type: "pdf" }],
    ["conversion_scale below 0.1", { conversion_scale: 0.09 }],
    ["conversion_scale 0", { conversion_scale: 0 }],
    ["conversion_scale negative", { conversion_scale: -1 }],
    ["conversion_scale above 3", { conversion_scale: 3.01 }],
    ["conversion_scale NaN", { conversion_scale: "NaN" }],
    ["conversion_scale Infinity", { conversion_scale: "Infinity" }],
  ])("%s", async (name, over) => {
    const body = convertBody(bl, over);
    const message = expectError(await failing(ROUTES.convert, body), 400, 611);
    const field = name.split(" ")[0] as string;
    expect(message).toMatch(new RegExp(`^${INVALID_PREFIX}: ${field}: `));
  });

  test("the URL rule is checked before authorization (bare project, unknown passphrase)", async () => {
    const token = await bl.token(bl.world.bareProject);
    const body = convertBody(bl, { resource_url: "ftp://x/y", passphrase: "nobody knows" });
    expectError(await failing(ROUTES.convert, body, { token }), 400, 611);
  });
});

describe.each(OPS)("%s: transport checks", (op) => {
  test("413 over MAX_BODY_BYTES (declared length)", async () => {
    const body = JSON.stringify(bodyOf(op, { pad: "x".repeat(MAX_BODY_BYTES) }));
    const res = await failing(ROUTES[op], body);
    const message = expectError(res, 413, 611);
    expect(message.startsWith(`${INVALID_PREFIX}: `)).toBe(true);
  });

  test("413 over MAX_BODY_BYTES (streamed, no Content-Length)", async () => {
    const chunk = new TextEncoder().encode(" ".repeat(1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= MAX_BODY_BYTES + 2048) controller.close();
        else {
          sent += chunk.length;
          controller.enqueue(chunk);
        }
      },
    });
    const before = await quietSnapshot();
    const res = await fetch(`${bl.url}${ROUTES[op]}`, {
      method: "POST",
      headers: { authorization: `Bearer ${await bl.token()}`, "content-type": "application/json" },
      body: stream,
      duplex: "half",
    } as RequestInit);
    expectError({ status: res.status, headers: res.headers, text: await res.text() }, 413, 611);
    expect(await redisSnapshot(bl)).toEqual(before);
  });

  test("exactly MAX_BODY_BYTES is not too large", async () => {
    const base = JSON.stringify(bodyOf(op, { uid: "at-limit", pad: "" }));
    const body = base.replace('"pad":""', `"pad":"${"x".repeat(MAX_BODY_BYTES - base.length)}"`);
    expect(Buffer.byteLength(body)).toBe(MAX_BODY_BYTES);
    const res = await postJson(bl, ROUTES[op], body);
    expect(res.status, res.text).toBe(200);
  });

  test.each<[string, string | null]>([
    ["missing", null],
    ["text/plain", "text/plain"],
    ["form", "application/x-www-form-urlencoded"],
    ["multipart", "multipart/form-data; boundary=x"],
    ["application/jsonx", "application/jsonx"],
    ["application/json-patch+json", "application/json-patch+json"],
    ["application/grpc", "application/grpc"],
  ])("415 for Content-Type %s", async (_name, contentType) => {
    const res = await failing(ROUTES[op], JSON.stringify(bodyOf(op)), { contentType });
    const message = expectError(res, 415, 611);
    expect(message.startsWith(`${INVALID_PREFIX}: `)).toBe(true);
  });

  test("application/json with a charset is accepted", async () => {
    const res = await postJson(bl, ROUTES[op], bodyOf(op, { uid: "charset" }), {
      contentType: "application/json; charset=utf-8",
    });
    expect(res.status, res.text).toBe(200);
  });

  test.each(["GET", "PUT", "DELETE", "PATCH"])("405 with Allow: POST for %s", async (method) => {
    const res = await failing(ROUTES[op], bodyOf(op), { method });
    expectError(res, 405, 405);
    expect(res.headers.get("allow")).toBe("POST");
  });

  test("404 for a path below the route", async () => {
    // (One segment below fileconvert is a conversion task's path: GET and DELETE, see below.)
    expectError(await failing(`${ROUTES[op]}/extra/more`, bodyOf(op)), 404, 404);
  });
});

test("POST on a conversion task's path → 405 with Allow: GET, DELETE", async () => {
  const res = await failing(`${ROUTES.convert}/some-task`, {});
  expectError(res, 405, 405);
  expect(res.headers.get("allow")).toBe("GET, DELETE");
});

test.each(["/v1/channel/pstn/unmute", "/v1/whiteboard/FileConvert", "/v2/channel/pstn/mute", "/", "/nope"])(
  "404 for the unknown path %s",
  async (path) => {
    expectError(await failing(path, {}), 404, 404);
  },
);

describe.each(OPS)("%s: 401", (op) => {
  test("every kind of bad Authorization → 401 with WWW-Authenticate: Bearer", async () => {
    for (const c of await unauthenticatedCases(bl)) {
      const o: PostOptions = c.authorization === undefined ? { token: null } : { authorization: c.authorization };
      const res = await failing(ROUTES[op], bodyOf(op), o);
      expectError(res, 401, 401);
      expect(res.headers.get("www-authenticate"), c.name).toMatch(/^Bearer( |$)/);
    }
  });

  test("authentication comes first: no token and an invalid body → 401", async () => {
    for (const body of ["not json", "[]", JSON.stringify({ uid: "" })]) {
      const res = await failing(ROUTES[op], body, { token: null });
      expectError(res, 401, 401);
      expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
    }
  });

  test("a token of an unknown project is authenticated but authorizes nothing", async () => {
    const token = await bl.token("proj-nobody");
    const res = await failing(ROUTES[op], bodyOf(op), { token });
    expectError(res, 403, 403);
  });
});

describe("mute: 403", () => {
  test.each<[string, () => string]>([
    ["an unknown passphrase", () => "no such passphrase"],
    ["the attendee passphrase", () => bl.world.attendeePassphrase],
    ["another project's host passphrase", () => bl.world.otherHostPassphrase],
    ["the host passphrase with different case", () => bl.world.hostPassphrase.toUpperCase()],
  ])("%s", async (_name, passphrase) => {
    const res = await failing(ROUTES.mute, muteBody(bl, { passphrase: passphrase(), uid: "seeded", mute: false }));
    expectError(res, 403, 403);
    expect(res.headers.get("www-authenticate")).toBeNull();
  });

  test("all refusals read the same (an unknown passphrase is not told apart)", async () => {
    const a = JSON.parse((await postJson(bl, ROUTES.mute, muteBody(bl, { passphrase: "nope" }))).text) as unknown;
    const b = JSON.parse(
      (await postJson(bl, ROUTES.mute, muteBody(bl, { passphrase: bl.world.otherHostPassphrase }))).text,
    ) as unknown;
    const c = JSON.parse(
      (await postJson(bl, ROUTES.mute, muteBody(bl, { passphrase: bl.world.attendeePassphrase }))).text,
    ) as unknown;
    expect(a).toEqual(b);
    expect(a).toEqual(c);
  });
});

describe("fileconvert: 403 and 404", () => {
  test("403 when the whiteboard is not set up for the caller's project", async () => {
    const token = await bl.token(bl.world.bareProject);
    const res = await failing(ROUTES.convert, convertBody(bl, { passphrase: bl.world.bareHostPassphrase }), { token });
    expectError(res, 403, 403);
  });

  test.each<[string, () => string]>([
    ["an unknown passphrase", () => "no such passphrase"],
    ["another project's passphrase", () => bl.world.otherHostPassphrase],
  ])("404 for %s", async (_name, passphrase) => {
    const res = await failing(ROUTES.convert, convertBody(bl, { passphrase: passphrase() }));
    expectError(res, 404, 404);
  });

  test("another project's token cannot use this project's passphrase", async () => {
    const token = await bl.token(bl.world.otherProject);
    const res = await failing(ROUTES.convert, convertBody(bl, { passphrase: bl.world.hostPassphrase }), { token });
    expectError(res, 404, 404);
  });
});

describe("fileconvert: the conversion backend fails after the answer", () => {
  // A server of its own (projector API, so its tasks can be cancelled): its tasks are retried while `bl` is snapshot.
  let at: Boardline;
  beforeAll(async () => {
    at = await startBoardline({
      conversionTimeoutMs: TIMEOUT_MS,
      conversionApi: "projector",
      follow: { firstPollMs: 600_000 },
    });
  });
  afterAll(async () => {
    await at?.close();
  });
  afterEach(() => {
    at?.simulator.clearFaults();
  });

  const resourceUrl = () => `https://docs.example.com/${randomBytes(6).toString("hex")}.pptx`;
  const task = async (uuid: string) => {
    const res = await postJson(at, `${ROUTES.convert}/${uuid}`, undefined, { method: "GET" });
    expect(res.status, res.text).toBe(200);
    return JSON.parse(res.text) as Record<string, unknown>;
  };
  const backendRequests = (resource: string) =>
    at.simulator.requests().filter((r) => (r.body as { resource?: string } | undefined)?.resource === resource);

  /** ConvertFile with the backend failing as `fault` says (once): the caller gets the task, Queued, first in its queue. */
  async function queuedDespite(fault: SimulatorFault | undefined, resource: string): Promise<string> {
    if (fault !== undefined) at.simulator.setFault({ ...fault, times: 1, operation: "create" });
    const res = await postJson(at, ROUTES.convert, convertBody(at, { resource_url: resource }));
    expect(res.status, res.text).toBe(200);
    const answer = JSON.parse(res.text) as Record<string, unknown>;
    expect(answer).toEqual({
      task_uuid: expect.stringMatching(/^[0-9a-f]{32}$/),
      status: "Queued",
      reused: false,
      queue_position: 1,
    });
    await eventually(() => backendRequests(resource).length > 0, 5_000, "the submission");
    return answer["task_uuid"] as string;
  }

  /** Waits for the project's queue to be empty, so the next test's request is the first in it again. */
  const drained = () =>
    eventually(
      async () => (await at.store.conversionQueue.queueLength(at.world.project)) === 0,
      5_000,
      "the queue to drain",
    );

  test.each<[string, SimulatorFault]>([
    ["answers 500", { kind: "status", status: 500 }],
    ["answers 502", { kind: "status", status: 502 }],
    ["answers 503", { kind: "status", status: 503 }],
    ["resets the connection", { kind: "reset" }],
    ["is too slow", { kind: "slow", delayMs: TIMEOUT_MS * 3 }],
    ["answers 401 (our credentials are wrong)", { kind: "status", status: 401 }],
    ["answers 403 (our credentials are wrong)", { kind: "status", status: 403 }],
    ["answers garbage", { kind: "garbage" }],
  ])("%s: the task stays Queued, and is submitted again until the backend takes it", async (_name, fault) => {
    const resource = resourceUrl();
    const uuid = await queuedDespite(fault, resource);
    expect(await task(uuid)).toMatchObject({ status: "Queued", failed_reason: "" });
    // Tried again (every 2 s); the fault was for one request.
    await eventually(async () => (await task(uuid))["status"] === "Waiting", 5_000, "the task to be submitted");
    const record = await at.store.conversions.getConversion(uuid);
    expect(record?.attempts).toBe(2);
    expect(backendRequests(resource)).toHaveLength(2);
    expect(record?.backendUuid).toBe(at.simulator.creates().findLast((c) => c.resource === resource)?.uuid);
    await drained();
  });

  test("answers 400: the task ends as Fail, and the backend's words reach no one", async () => {
    const resource = resourceUrl();
    const uuid = await queuedDespite({ kind: "status", status: 400 }, resource);
    await eventually(async () => (await task(uuid))["status"] === "Fail", 5_000, "the task to fail");
    const body = await task(uuid);
    expect(body).toMatchObject({ status: "Fail", failed_reason: "the conversion backend rejected the request" });
    expectNoLeak(JSON.stringify(body));
    // Rejected, not retried.
    expect(backendRequests(resource)).toHaveLength(1);
    expect((await at.store.conversions.getConversion(uuid))?.attempts).toBe(1);
    await drained();
  });

  test("500 says nothing but 'internal server error' (CancelConversion, the backend answering garbage)", async () => {
    const uuid = await queuedDespite(undefined, resourceUrl());
    await eventually(async () => (await task(uuid))["status"] === "Waiting", 5_000, "the task to be submitted");
    await drained();
    at.simulator.setFault({ kind: "garbage", times: 1, operation: "cancel" });
    const before = await quietSnapshot(at);
    const res = await postJson(at, `${ROUTES.convert}/${uuid}`, undefined, { method: "DELETE" });
    expectError(res, 500, 500, "internal server error");
    expect(await redisSnapshot(at)).toEqual(before);
  });

  test("an unreachable backend: the task is Queued, then Fail, 'timeout', CONVERSION_FOLLOW_MS after it was accepted", async () => {
    const down = await startBoardline({ conversionTimeoutMs: TIMEOUT_MS, follow: { followMs: 1_000 } });
    try {
      await down.simulator.close();
      const res = await postJson(down, ROUTES.convert, convertBody(down));
      expect(res.status, res.text).toBe(200);
      const { task_uuid: uuid, status } = JSON.parse(res.text) as { task_uuid: string; status: string };
      expect(status).toBe("Queued");
      const get = async () =>
        JSON.parse((await postJson(down, `${ROUTES.convert}/${uuid}`, undefined, { method: "GET" })).text) as Record<
          string,
          unknown
        >;
      await eventually(async () => (await get())["status"] === "Fail", 5_000, "the task to time out");
      expect(await get()).toMatchObject({ status: "Fail", failed_reason: "timeout", backend_task_uuid: "" });
    } finally {
      await down.close();
    }
  });
});

test("Redis down → 503 on both routes, without Redis text", async () => {
  const server = await startRedisServer();
  const down = await startBoardline({ redisUrl: server.url });
  try {
    server.kill("SIGKILL");
    for (const op of OPS) {
      const res = await postJson(down, ROUTES[op], op === "mute" ? muteBody(down) : convertBody(down));
      expectError(res, 503, 503);
    }
  } finally {
    // Back up, so closing (QUIT, deleting the test keys) finds it.
    await server.restart();
    await down.close();
    await server.stop();
  }
});

test("mute: validation comes before authorization (bad uid, unknown passphrase → 611)", async () => {
  const res = await failing(ROUTES.mute, muteBody(bl, { uid: "", passphrase: "nobody knows" }));
  expectError(res, 400, 611);
});

describe("429: too many wrong passphrases (with the guessing limit on)", () => {
  test.each(OPS)("%s", async (op) => {
    const limited = await startBoardline({
      guard: (store) => new MissLimitGuard(store, { attempts: 3, windowSeconds: 60 }),
    });
    try {
      const body = (over: Record<string, unknown>) =>
        op === "mute" ? muteBody(limited, over) : convertBody(limited, over);
      const token = await limited.token(limited.world.project, "guesser");
      const refused = op === "mute" ? [403, 403] : [404, 404];
      for (let i = 0; i < 3; i++) {
        expectError(
          await postJson(limited, ROUTES[op], body({ passphrase: `guess ${i}` }), { token }),
          refused[0] as number,
          refused[1] as number,
        );
      }
      const before = await redisSnapshot(limited);
      // Locked out: even the right passphrase is refused now, and nothing happens.
      for (const passphrase of ["guess 4", limited.world.hostPassphrase]) {
        const res = await postJson(limited, ROUTES[op], body({ passphrase }), { token });
        expectError(res, 429, 429);
        expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
        expect(Number(res.headers.get("retry-after"))).toBeLessThanOrEqual(60);
      }
      expect(conversionKeys(await redisSnapshot(limited), limited)).toEqual(conversionKeys(before, limited));
      expect(await limited.store.getMuteState(limited.world.project, limited.world.channel)).toEqual({});
      // Another caller of the same project is not locked out.
      const other = await limited.token(limited.world.project, "someone else");
      expect((await postJson(limited, ROUTES[op], body({}), { token: other })).status).toBe(200);
    } finally {
      await limited.close();
    }
  });
});

describe.each(OPS)("%s over HTTP/2 (h2c, prior knowledge)", (op) => {
  test("401 with WWW-Authenticate", async () => {
    const before = await quietSnapshot();
    const res = await postJsonH2(bl, ROUTES[op], bodyOf(op), { token: null });
    expectError(res, 401, 401);
    expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(await redisSnapshot(bl)).toEqual(before);
  });

  test("611 for an invalid body", async () => {
    expectError(await postJsonH2(bl, ROUTES[op], "[1,2]"), 400, 611);
    expectError(await postJsonH2(bl, ROUTES[op], bodyOf(op, { passphrase: "" })), 400, 611);
  });

  test("413 over MAX_BODY_BYTES", async () => {
    const before = await quietSnapshot();
    const res = await postJsonH2(bl, ROUTES[op], bodyOf(op, { pad: "x".repeat(MAX_BODY_BYTES * 4) }));
    expectError(res, 413, 611);
    expect(await redisSnapshot(bl)).toEqual(before);
  });

  test("415, 405 and 404", async () => {
    expectError(await postJsonH2(bl, ROUTES[op], bodyOf(op), { contentType: "text/plain" }), 415, 611);
    const res = await requestH2(bl.url, ROUTES[op], { method: "GET" });
    expectError(res, 405, 405);
    expect(res.headers.get("allow")).toBe("POST");
    expectError(await postJsonH2(bl, `${ROUTES[op]}x`, bodyOf(op)), 404, 404);
  });

  test("403/404 for a passphrase of another project", async () => {
    const res = await postJsonH2(bl, ROUTES[op], bodyOf(op, { passphrase: bl.world.otherHostPassphrase }));
    if (op === "mute") expectError(res, 403, 403);
    else expectError(res, 404, 404);
  });
});
