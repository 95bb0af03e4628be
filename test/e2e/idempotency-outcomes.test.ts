/**
 * Safe retries when the first call fails, over every protocol: a call that
 * failed before the backend was asked (passphrase unknown, whiteboard not set
 * up, Redis down) or that the backend refused keeps nothing — the retry with
 * the same key does the work; a call whose backend outcome is unknown (a
 * time-out) keeps the key locked (409 / ABORTED, Retry-After) until the lock
 * runs out, then the retry does the work. And answers go after the store's TTL.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { MemoryStore } from "../../src/store/memory/store.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { eventually } from "../harness/eventually.js";
import { convertBody } from "../harness/request-bodies.js";
import { type Answer, convertWithKey, createsOf, KEY_PROTOCOLS, type KeyProtocol } from "./helpers/idempotency.js";

const TIMEOUT_MS = 300;
const LOCK_MS = 1500;
const DEADLINE_EXCEEDED = 4;
const ABORTED = 10;
const FAILED_PRECONDITION = 9;

let bl: Boardline;
let shortTtl: Boardline;
let memory: Boardline;
beforeAll(async () => {
  [bl, shortTtl, memory] = await Promise.all([
    startBoardline({ store: "redis", conversionTimeoutMs: TIMEOUT_MS, idempotencyLockMs: LOCK_MS }),
    startBoardline({ store: "redis", idempotencyTtlSeconds: 1 }),
    startBoardline({ store: "memory" }),
  ]);
});
afterAll(async () => {
  await Promise.all([bl?.close(), shortTtl?.close(), memory?.close()]);
});

function fresh(at: Boardline, over: Record<string, unknown> = {}) {
  const resource = `https://docs.example.com/${randomUUID()}.pptx`;
  return { resource, body: convertBody(at, { resource_url: resource, ...over }), key: randomUUID() };
}

const byProtocol = (protocol: KeyProtocol, http: number, grpcCode: number) => (protocol === "json" ? http : grpcCode);

function taskOf(answer: Answer): string {
  if (!answer.ok) throw new Error(`expected success, got ${JSON.stringify(answer)}`);
  return answer.taskUuid;
}

describe.each(KEY_PROTOCOLS)("over %s", (protocol) => {
  test("a time-out keeps the key locked (409 / ABORTED, Retry-After) until the lock runs out; then a retry does the work", async () => {
    const { resource, body, key } = fresh(bl);
    bl.simulator.setFault({ kind: "slow", delayMs: 2000, operation: "create", times: 1 });
    const first = await convertWithKey(bl, protocol, body, key);
    expect(first).toMatchObject({ ok: false, code: 504, status: byProtocol(protocol, 504, DEADLINE_EXCEEDED) });
    const locked = await convertWithKey(bl, protocol, body, key);
    expect(locked).toMatchObject({ ok: false, code: 409, status: byProtocol(protocol, 409, ABORTED) });
    if (locked.ok) return;
    expect(locked.message).toMatch(/outcome of the request with this Idempotency-Key is unknown/);
    expect(locked.retryAfter).toBeGreaterThanOrEqual(1);
    expect(locked.retryAfter).toBeLessThanOrEqual(Math.ceil(LOCK_MS / 1000));
    // Another request under the key is still refused as such.
    const other = await convertWithKey(bl, protocol, { ...body, conversion_type: "dynamic" }, key);
    expect(other).toMatchObject({ ok: false, code: 422, status: byProtocol(protocol, 422, FAILED_PRECONDITION) });
    expect(createsOf(bl, resource)).toBe(1);

    let retried: Answer = locked;
    await eventually(
      async () => {
        retried = await convertWithKey(bl, protocol, body, key);
        return retried.ok || retried.code !== 409;
      },
      LOCK_MS + 3000,
      "the lock to run out",
    );
    const task = taskOf(retried);
    expect(createsOf(bl, resource)).toBe(2);
    expect(await convertWithKey(bl, protocol, body, key)).toEqual(retried);
    expect(task).toMatch(/^[0-9a-f]{32}$/);
  });

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
    expect(createsOf(bl, resource)).toBe(1);
  });
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
    expect(createsOf(bl, resource)).toBe(1);
  });

  test.each([
    ["the backend refused it (400 → 400/611)", { kind: "status", status: 400 } as const, 611],
    ["the backend over its capacity (503, Retry-After)", { kind: "too-many-tasks" } as const, 503],
  ])("%s: the retry with the key does the work", async (_, fault, code) => {
    const { resource, body, key } = fresh(bl);
    bl.simulator.setFault({ ...fault, operation: "create", times: 1 });
    expect(await convertWithKey(bl, "json", body, key)).toMatchObject({ ok: false, code });
    taskOf(await convertWithKey(bl, "json", body, key));
    expect(createsOf(bl, resource)).toBe(2);
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
    expect(createsOf(memory, resource)).toBe(1);
  });
});

test("an answer is kept for the store's TTL; after it, the key is free and a retry does the work again", async () => {
  const { resource, body, key } = fresh(shortTtl);
  const first = taskOf(await convertWithKey(shortTtl, "json", body, key));
  let later = first;
  await eventually(
    async () => {
      later = taskOf(await convertWithKey(shortTtl, "grpc", body, key));
      return later !== first;
    },
    5000,
    "the answer to expire",
  );
  expect(createsOf(shortTtl, resource)).toBe(2);
});
