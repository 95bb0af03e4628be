/**
 * Safe retries of ConvertFile over every protocol (JSON, Connect, gRPC with
 * @grpc/grpc-js, gRPC-Web), against a real server on Redis and the conversion
 * simulator, which counts the tasks it is asked to create (the queue submits
 * them after the answer, so the counts are waited for, or taken once the
 * project's queue was submitted): a retry gets the first answer and the
 * backend sees one create; another request under the key is 422 /
 * FAILED_PRECONDITION; a call while another with the key is still working is
 * 409 / ABORTED with Retry-After, and one task is made; bad keys are 400/611
 * and change nothing; a key is its caller's (project and subject); the header
 * and the metadata name the same key; Mute ignores it.
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { keySchema } from "../../src/store/schema/keys.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { eventually } from "../harness/eventually.js";
import { postJson } from "../harness/http.js";
import { convertBody, muteBody } from "../harness/request-bodies.js";
import { ROUTES } from "../harness/routes.js";
import {
  type Answer,
  convertWithKey,
  createsOf,
  holdQueueing,
  KEY_PROTOCOLS,
  type KeyProtocol,
  queueSubmitted,
} from "./helpers/idempotency.js";

/** gRPC status codes (connect-es's Code has the same numbers). */
const INVALID_ARGUMENT = 3;
const FAILED_PRECONDITION = 9;
const ABORTED = 10;

let bl: Boardline;
beforeAll(async () => {
  bl = await startBoardline({ store: "redis" });
});
afterAll(async () => {
  await bl?.close();
});

/** A request of its own (a resource no other test converts), and a fresh key. */
function fresh(over: Record<string, unknown> = {}) {
  const resource = `https://docs.example.com/${randomUUID()}.pptx`;
  return { resource, body: convertBody(bl, { resource_url: resource, ...over }), key: randomUUID() };
}

const httpOrGrpc = (protocol: KeyProtocol, http: number, grpcCode: number) => (protocol === "json" ? http : grpcCode);

function expectOk(answer: Answer): Extract<Answer, { ok: true }> {
  if (!answer.ok) throw new Error(`expected success, got ${JSON.stringify(answer)}`);
  return answer;
}

/** Waits until the backend was asked to create `count` tasks for `resource`. */
const createdTimes = (resource: string, count: number) =>
  eventually(() => createsOf(bl, resource) >= count, 5000, `${count} creates of ${resource}`);

describe.each(KEY_PROTOCOLS)("over %s", (protocol) => {
  test("a retry with the same key and request gets the same answer; the backend saw one create", async () => {
    const { resource, body, key } = fresh();
    const first = expectOk(await convertWithKey(bl, protocol, body, key));
    expect(first).toMatchObject({ status: "Queued", reused: false, queuePosition: expect.any(Number) });
    expect(first.taskUuid).toMatch(/^[0-9a-f]{32}$/);
    expect(first.queuePosition).toBeGreaterThanOrEqual(1);
    // The task moves on (submitted, then followed); the retry still answers what the first call answered.
    await eventually(
      async () => (await bl.store.conversions.getConversion(first.taskUuid))?.status !== "Queued",
      5000,
      "the task to be submitted",
    );
    for (let i = 0; i < 3; i++) expect(await convertWithKey(bl, protocol, body, key)).toEqual(first);
    await queueSubmitted(bl);
    expect(createsOf(bl, resource)).toBe(1);
  });

  test("the same key with another request → 422 / FAILED_PRECONDITION, and no second create", async () => {
    const { resource, body, key } = fresh();
    expectOk(await convertWithKey(bl, protocol, body, key));
    const other = await convertWithKey(bl, protocol, { ...body, conversion_type: "dynamic" }, key);
    expect(other).toMatchObject({ ok: false, code: 422, status: httpOrGrpc(protocol, 422, FAILED_PRECONDITION) });
    expect(other.ok ? "" : other.message).toBe(
      "this Idempotency-Key was used with a different request; use a new key for a new request",
    );
    await queueSubmitted(bl);
    expect(createsOf(bl, resource)).toBe(1);
  });

  test("a call while another with the key is still working → 409 / ABORTED with Retry-After; one create", async () => {
    const { resource, body, key } = fresh();
    // The first call is held while it queues the task, its key claimed; the second comes meanwhile.
    const hold = holdQueueing(bl);
    const first = convertWithKey(bl, protocol, body, key);
    try {
      await eventually(() => hold.held() === 1, 3000, "the first call to be queueing");
      expect(await convertWithKey(bl, protocol, body, key)).toEqual({
        ok: false,
        code: 409,
        status: httpOrGrpc(protocol, 409, ABORTED),
        message: "a request with this Idempotency-Key is still in progress, retry later",
        retryAfter: 1,
      });
    } finally {
      hold.release();
    }
    const won = expectOk(await first);
    expect(won).toMatchObject({ status: "Queued", reused: false });
    expect(await convertWithKey(bl, protocol, body, key)).toEqual(won);
    await queueSubmitted(bl);
    expect(createsOf(bl, resource)).toBe(1);
  });

  test.each([
    ["empty", ""],
    ["256 characters", "k".repeat(256)],
  ])("a bad key (%s) → 400/611, no create, nothing kept", async (_, key) => {
    const { resource, body } = fresh();
    const answer = await convertWithKey(bl, protocol, body, key);
    expect(answer).toMatchObject({ ok: false, code: 611, status: httpOrGrpc(protocol, 400, INVALID_ARGUMENT) });
    expect(answer.ok ? "" : answer.message).toMatch(/^the API request is invalid.*: idempotency-key: /);
    await queueSubmitted(bl);
    expect(createsOf(bl, resource)).toBe(0);
  });

  test("a key is the caller's: another project, or another subject, with the same key does its own work", async () => {
    const { resource, body, key } = fresh();
    const mine = expectOk(await convertWithKey(bl, protocol, body, key));
    const otherProject = { ...body, passphrase: bl.world.otherHostPassphrase };
    const theirs = expectOk(
      await convertWithKey(bl, protocol, otherProject, key, { token: await bl.token(bl.world.otherProject) }),
    );
    const colleague = expectOk(
      await convertWithKey(bl, protocol, body, key, { token: await bl.token(bl.world.project, "colleague") }),
    );
    expect(theirs).toMatchObject({ reused: false });
    expect(theirs.taskUuid).not.toBe(mine.taskUuid);
    // The colleague's call did its own work: the identical request of the project found my task
    // (reused), where my key's kept answer would have said reused: false.
    expect(mine).toMatchObject({ reused: false });
    expect(colleague).toMatchObject({ taskUuid: mine.taskUuid, reused: true });
    await createdTimes(resource, 2);
    await queueSubmitted(bl);
    expect(createsOf(bl, resource)).toBe(2);
  });
});

describe("control and non-ASCII characters in the key", () => {
  test.each<[KeyProtocol, string]>([
    ["json", "a\tb"],
    ["json", "cl\u00e9"],
    ["connect", "a\tb"],
    ["grpc-web", "a\tb"],
  ])("over %s, %j → 400/611", async (protocol, key) => {
    const { resource, body } = fresh();
    const answer = await convertWithKey(bl, protocol, body, key);
    expect(answer).toMatchObject({ ok: false, code: 611, status: httpOrGrpc(protocol, 400, INVALID_ARGUMENT) });
    await queueSubmitted(bl);
    expect(createsOf(bl, resource)).toBe(0);
  });
});

describe("one key, whatever the protocol", () => {
  test("the JSON header and the gRPC metadata of one key and one request are one call", async () => {
    const { resource, body, key } = fresh();
    const first = expectOk(await convertWithKey(bl, "json", body, key));
    for (const protocol of ["grpc", "connect", "grpc-web"] as const) {
      expect(await convertWithKey(bl, protocol, body, key), protocol).toEqual(first);
    }
    const { resource: r2, body: b2, key: k2 } = fresh({ conversion_scale: 1.5 });
    const viaGrpc = expectOk(await convertWithKey(bl, "grpc", b2, k2));
    expect(await convertWithKey(bl, "json", b2, k2)).toEqual(viaGrpc);
    // The draft's quoted form names the same key.
    expect(await convertWithKey(bl, "json", b2, `"${k2}"`)).toEqual(viaGrpc);
    await queueSubmitted(bl);
    expect([createsOf(bl, resource), createsOf(bl, r2)]).toEqual([1, 1]);
  });

  test("the answer is kept under the documented key, for 24 hours", async () => {
    const { body, key } = fresh();
    const first = expectOk(await convertWithKey(bl, "json", body, key));
    const redis = new Redis(bl.redisUrl);
    try {
      const name = keySchema(bl.prefix).idempotency(bl.world.project, "tester", key);
      expect(name.startsWith(`${bl.prefix}idem:{${bl.world.project}}:`)).toBe(true);
      const record = await redis.hgetall(name);
      expect(record).toMatchObject({
        state: "done",
        answer: JSON.stringify({
          task_uuid: first.taskUuid,
          status: first.status,
          reused: false,
          queue_position: first.queuePosition,
        }),
      });
      expect(record["fingerprint"]).toMatch(/^[0-9a-f]{64}$/);
      expect(await redis.ttl(name)).toBeGreaterThan(86_400 - 10);
    } finally {
      redis.disconnect();
    }
  });
});

describe("Mute ignores the header", () => {
  test("a bad key, or one key with two different mutes: each is answered and done", async () => {
    for (const [key, mute] of [
      ["", true],
      ["same", true],
      ["same", false],
    ] as const) {
      const res = await postJson(bl, ROUTES.mute, muteBody(bl, { mute }), { headers: { "idempotency-key": key } });
      expect(res.status).toBe(200);
    }
    expect((await bl.store.getMuteState(bl.world.project, bl.world.channel))["u-1"]).toBe(false);
  });
});
