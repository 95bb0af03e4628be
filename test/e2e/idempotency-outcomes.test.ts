/**
 * Safe retries when the first call does not simply succeed, over every
 * protocol. A call that failed before anything was queued (passphrase
 * unknown, whiteboard not set up, Redis down, the queue full) keeps nothing:
 * the retry with the same key does the work. A call whose outcome is unknown
 * (Redis failing while the task was being queued) keeps the key locked (409 /
 * ABORTED, Retry-After) until the lock runs out; then the retry does the work,
 * and gets the first call's task (reused) if it was queued after all. A client
 * that goes away meanwhile does not leave the outcome unknown: the task is
 * queued and its answer kept. The backend's own refusals come after the
 * answer, so the key keeps that answer. And answers go after the store's TTL.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { MemoryStore } from "../../src/store/memory/store.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { eventually } from "../harness/eventually.js";
import { postJson } from "../harness/http.js";
import { convertBody } from "../harness/request-bodies.js";
import { ROUTES } from "../harness/routes.js";
import {
  type Answer,
  convertWithKey,
  createsOf,
  failNextQueueing,
  holdQueueing,
  KEY_PROTOCOLS,
  type KeyProtocol,
  queueSubmitted,
} from "./helpers/idempotency.js";

const LOCK_MS = 1500;
const UNAVAILABLE = 14;
const ABORTED = 10;
const FAILED_PRECONDITION = 9;
const RESOURCE_EXHAUSTED = 8;

let bl: Boardline;
let shortTtl: Boardline;
let memory: Boardline;
/** A project queue that holds one request. */
let small: Boardline;
beforeAll(async () => {
  [bl, shortTtl, memory, small] = await Promise.all([
    startBoardline({ store: "redis", idempotencyLockMs: LOCK_MS }),
    startBoardline({ store: "redis", idempotencyTtlSeconds: 1 }),
    startBoardline({ store: "memory" }),
    startBoardline({ store: "redis", follow: { queueMax: 1 } }),
  ]);
});
afterAll(async () => {
  await Promise.all([bl?.close(), shortTtl?.close(), memory?.close(), small?.close()]);
});

function fresh(at: Boardline, over: Record<string, unknown> = {}) {
  const resource = `https://docs.example.com/${randomUUID()}.pptx`;
  return { resource, body: convertBody(at, { resource_url: resource, ...over }), key: randomUUID() };
}

const byProtocol = (protocol: KeyProtocol, http: number, grpcCode: number) => (protocol === "json" ? http : grpcCode);

function okOf(answer: Answer): Extract<Answer, { ok: true }> {
  if (!answer.ok) throw new Error(`expected success, got ${JSON.stringify(answer)}`);
  return answer;
}

function taskOf(answer: Answer): string {
  return okOf(answer).taskUuid;
}

/** Retries until the key's lock runs out (an answer other than 409). */
async function afterTheLock(at: Boardline, protocol: KeyProtocol, body: Record<string, unknown>, key: string) {
  let retried: Answer | undefined;
  await eventually(
    async () => {
      retried = await convertWithKey(at, protocol, body, key);
      return retried.ok || retried.code !== 409;
    },
    LOCK_MS + 3000,
    "the lock to run out",
  );
  return okOf(retried as Answer);
}

describe.each(KEY_PROTOCOLS)("over %s", (protocol) => {
  test.each([
    ["before the task was written: the retry queues it", "before", false],
    ["before its queue was indexed: the retry gets that task (reused), and it is submitted", "unindexed", true],
    ["after the task was queued: the retry gets that task (reused)", "after", true],
  ] as const)(
    "Redis failing while the task is queued (%s) keeps the key locked (409 / ABORTED, Retry-After) until the lock runs out",
    async (_, when, queued) => {
      const { resource, body, key } = fresh(bl);
      failNextQueueing(bl, when);
      const first = await convertWithKey(bl, protocol, body, key);
      expect(first).toMatchObject({ ok: false, code: 503, status: byProtocol(protocol, 503, UNAVAILABLE) });
      const locked = await convertWithKey(bl, protocol, body, key);
      expect(locked).toMatchObject({ ok: false, code: 409, status: byProtocol(protocol, 409, ABORTED) });
      if (locked.ok) return;
      expect(locked.message).toMatch(/outcome of the request with this Idempotency-Key is unknown/);
      expect(locked.retryAfter).toBeGreaterThanOrEqual(1);
      expect(locked.retryAfter).toBeLessThanOrEqual(Math.ceil(LOCK_MS / 1000));
      // Another request under the key is still refused as such.
      const other = await convertWithKey(bl, protocol, { ...body, conversion_type: "dynamic" }, key);
      expect(other).toMatchObject({ ok: false, code: 422, status: byProtocol(protocol, 422, FAILED_PRECONDITION) });

      const retried = await afterTheLock(bl, protocol, body, key);
      expect(retried.taskUuid).toMatch(/^[0-9a-f]{32}$/);
      expect(retried.reused).toBe(queued);
      expect(await convertWithKey(bl, protocol, body, key)).toEqual(retried);
      // Converted once either way, without another request of the project to move its queue.
      await eventually(() => createsOf(bl, resource) === 1, 5000, "the task to be submitted");
      await queueSubmitted(bl);
      expect(createsOf(bl, resource)).toBe(1);
    },
  );

  test("an unknown passphrase (404) keeps nothing: once it exists, the retry with the key does the work", async () => {
    const passphrase = `later ${randomUUID()}`;
    const { resource, body, key } = fresh(bl, { passphrase });
    expect(await convertWithKey(bl, protocol, body, key)).toMatchObject({ ok: false, code: 404 });
    await bl.store.createChannel({
      project: bl.world.project,
      channel: `c-${randomUUID()}`,
      hostPassphrase: passphrase,
    });
    taskOf(await convertWithKey(bl, protocol, body, key));
    await queueSubmitted(bl);
    expect(createsOf(bl, resource)).toBe(1);
  });
});

test("a client that goes away while its call is queueing leaves no unknown outcome: the retry gets the task", async () => {
  const { resource, body, key } = fresh(bl);
  const hold = holdQueueing(bl);
  const client = new AbortController();
  const gone = postJson(bl, ROUTES.convert, body, { headers: { "idempotency-key": key }, signal: client.signal }).catch(
    (e: unknown) => e,
  );
  try {
    await eventually(() => hold.held() === 1, 3000, "the call to be queueing");
    client.abort();
    expect(await gone).toBeInstanceOf(Error);
  } finally {
    hold.release();
  }
  // The call went on without its client: the task is queued, and the key keeps its answer.
  let retried: Answer | undefined;
  await eventually(
    async () => {
      retried = await convertWithKey(bl, "json", body, key);
      return retried.ok;
    },
    3000,
    "the call's answer to be kept",
  );
  expect(retried).toMatchObject({ ok: true, status: "Queued", reused: false });
  await queueSubmitted(bl);
  expect(createsOf(bl, resource)).toBe(1);
});

describe("other failures that keep nothing", () => {
  test("the whiteboard not set up (403): once it is, the retry does the work", async () => {
    const project = `proj-late-${randomUUID()}`;
    const passphrase = `host ${randomUUID()}`;
    await bl.store.createChannel({ project, channel: "c", hostPassphrase: passphrase });
    const { resource, body, key } = fresh(bl, { passphrase });
    const token = await bl.token(project);
    expect(await convertWithKey(bl, "grpc", body, key, { token })).toMatchObject({ ok: false, code: 403 });
    await bl.store.setWhiteboard(project, { region: "sg", credentials: { sdkToken: bl.world.sdkToken } });
    taskOf(await convertWithKey(bl, "grpc", body, key, { token }));
    await queueSubmitted(bl, { passphrase, token });
    expect(createsOf(bl, resource)).toBe(1);
  });

  test("a full queue (429 / RESOURCE_EXHAUSTED): once it has room, the retry with the key does the work", async () => {
    // The queue's one request stays in it while the backend takes its time to create it.
    small.simulator.setFault({ kind: "slow", delayMs: 1500, operation: "create", times: 1 });
    const ahead = fresh(small);
    taskOf(await convertWithKey(small, "json", ahead.body, ahead.key));
    await eventually(() => createsOf(small, ahead.resource) === 1, 3000, "the request ahead at the backend");
    const { resource, body, key } = fresh(small);
    const full = await convertWithKey(small, "grpc", body, key);
    expect(full).toMatchObject({ ok: false, code: 429, status: RESOURCE_EXHAUSTED });
    expect(full.ok ? 0 : full.retryAfter).toBeGreaterThanOrEqual(1);
    let retried: Answer = full;
    await eventually(
      async () => {
        retried = await convertWithKey(small, "grpc", body, key);
        return retried.ok;
      },
      5000,
      "the queue to have room",
    );
    expect(retried).toMatchObject({ ok: true, status: "Queued", reused: false });
    await eventually(() => createsOf(small, resource) === 1, 3000, "the retried request at the backend");
  });

  test("the store down before the call (503): the retry with the key does the work", async () => {
    const { resource, body, key } = fresh(memory);
    const store = memory.store as MemoryStore;
    store.setUnavailable(true);
    try {
      expect(await convertWithKey(memory, "connect", body, key)).toMatchObject({ ok: false, code: 503 });
    } finally {
      store.setUnavailable(false);
    }
    taskOf(await convertWithKey(memory, "connect", body, key));
    await queueSubmitted(memory);
    expect(createsOf(memory, resource)).toBe(1);
  });
});

describe("the backend's refusals come after the answer: the key keeps it", () => {
  test("the backend rejecting the request (its 400): the task ends Fail; the retry gets the same answer, a new key converts again", async () => {
    const { resource, body, key } = fresh(bl);
    bl.simulator.setFault({ kind: "status", status: 400, operation: "create", times: 1 });
    const first = okOf(await convertWithKey(bl, "json", body, key));
    await eventually(
      async () => (await bl.store.conversions.getConversion(first.taskUuid))?.status === "Fail",
      5000,
      "the task to fail",
    );
    expect(await bl.store.conversions.getConversion(first.taskUuid)).toMatchObject({
      failedReason: "the conversion backend rejected the request",
    });
    expect(await convertWithKey(bl, "json", body, key)).toEqual(first);
    // A failed task is not reused: the same request under a new key is converted again.
    const again = okOf(await convertWithKey(bl, "json", body, randomUUID()));
    expect(again).toMatchObject({ status: "Queued", reused: false });
    expect(again.taskUuid).not.toBe(first.taskUuid);
    await queueSubmitted(bl);
    expect(createsOf(bl, resource)).toBe(2);
    expect(bl.simulator.creates().filter((c) => c.resource === resource)).toHaveLength(1);
  });

  test("the backend over its capacity: the request waits its turn again; the retry gets the same answer", async () => {
    const { resource, body, key } = fresh(bl);
    bl.simulator.setFault({ kind: "too-many-tasks", operation: "create", times: 1 });
    const first = okOf(await convertWithKey(bl, "json", body, key));
    await eventually(
      () => bl.simulator.creates().some((c) => c.resource === resource),
      5000,
      "the request to be submitted again",
    );
    expect(createsOf(bl, resource)).toBe(2);
    expect(await convertWithKey(bl, "json", body, key)).toEqual(first);
    await queueSubmitted(bl);
    expect(createsOf(bl, resource)).toBe(2);
  });
});

test("an answer is kept for the store's TTL; after it, the key is free and a retry does the work again", async () => {
  const { resource, body, key } = fresh(shortTtl);
  const first = okOf(await convertWithKey(shortTtl, "json", body, key));
  expect(first.reused).toBe(false);
  let later: Answer = first;
  // The work done again finds the first call's task, as an identical request: reused, where the
  // kept answer said it was not.
  await eventually(
    async () => {
      later = okOf(await convertWithKey(shortTtl, "grpc", body, key));
      return later.ok && later.reused;
    },
    5000,
    "the answer to expire",
  );
  expect(later).toMatchObject({ taskUuid: first.taskUuid, reused: true });
  await queueSubmitted(shortTtl);
  expect(createsOf(shortTtl, resource)).toBe(1);
});
