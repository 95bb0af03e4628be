/**
 * Safe retries in the domain, on the in-memory store: the key's syntax, the
 * request fingerprint (one for a request from JSON and from protobuf), and the
 * rules — a kept answer, 422 for another request, 409 while the key is held,
 * nothing kept for a call that failed before the backend or that the backend
 * refused, the key locked after an unknown outcome until the lock runs out.
 */
import { fromBinary, fromJson, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { MuteRequestSchema } from "../../../gen/channel/v1/pstn_pb.js";
import { ConvertFileRequestSchema } from "../../../gen/whiteboard/v1/whiteboard_pb.js";
import { Failure } from "../../../src/services/failure.js";
import { parseIdempotencyKey } from "../../../src/services/idempotency/key.js";
import {
  fingerprintOf,
  type KeyedCall,
  retryLockMs,
  SafeRetries,
} from "../../../src/services/idempotency/safe-retries.js";
import { MemoryStore } from "../../../src/store/memory/store.js";

const LOCK_MS = 15_000;

describe("the Idempotency-Key", () => {
  it.each([
    ["abc", "abc"],
    ["  8e03978e-40d5-43e8-bc93-6894a57f9324\t", "8e03978e-40d5-43e8-bc93-6894a57f9324"],
    ['"abc"', "abc"],
    ['"a\\"b\\\\c"', 'a"b\\c'],
    ['"unclosed', '"unclosed'],
    ["with inner spaces ok", "with inner spaces ok"],
    ["k".repeat(255), "k".repeat(255)],
  ])("%j is the key %j", (raw, key) => {
    expect(parseIdempotencyKey(raw)).toBe(key);
  });

  it.each([
    ["empty", ""],
    ["only white space", "   "],
    ["empty quotes", '""'],
    ["256 characters", "k".repeat(256)],
    ["NUL", "a\u0000b"],
    ["a newline", "a\nb"],
    ["DEL", "a\u007fb"],
    ["non-ASCII", "cl\u00e9"],
  ])("%s is refused as invalid, naming the key", (_, raw) => {
    expect(() => parseIdempotencyKey(raw)).toThrow(expect.objectContaining({ kind: "invalid" }));
    expect(() => parseIdempotencyKey(raw)).toThrow(/^idempotency-key: /);
  });
});

describe("the request fingerprint", () => {
  const json = { resource_url: "https://a.example/x.pptx", passphrase: "p", conversion_type: "static" };

  it("is one for a request read from JSON and the same one decoded from protobuf (unknown fields left out)", () => {
    const fromJsonRequest = fromJson(ConvertFileRequestSchema, { ...json, conversionScale: 1.5 });
    const bytes = toBinary(ConvertFileRequestSchema, fromJsonRequest);
    const withUnknown = new Uint8Array([...bytes, 0xf8, 0x06, 0x01]); // field 111, varint 1
    const decoded = fromBinary(ConvertFileRequestSchema, withUnknown);
    expect(decoded.$unknown?.length).toBe(1);
    expect(fingerprintOf(ConvertFileRequestSchema, decoded)).toBe(
      fingerprintOf(ConvertFileRequestSchema, fromJsonRequest),
    );
    expect(fingerprintOf(ConvertFileRequestSchema, decoded)).toMatch(/^[0-9a-f]{64}$/);
  });

  it("differs for any difference, an explicit default included, and between methods", () => {
    const base = fromJson(ConvertFileRequestSchema, json);
    const fingerprints = [
      base,
      fromJson(ConvertFileRequestSchema, { ...json, conversion_scale: 1.2 }),
      fromJson(ConvertFileRequestSchema, { ...json, passphrase: "q" }),
      fromJson(ConvertFileRequestSchema, { ...json, resource_url: "https://a.example/y.pptx" }),
      fromJson(ConvertFileRequestSchema, { ...json, conversion_type: "dynamic" }),
    ].map((r) => fingerprintOf(ConvertFileRequestSchema, r));
    expect(new Set(fingerprints).size).toBe(fingerprints.length);
    const empty = [fromJson(ConvertFileRequestSchema, {}), fromJson(MuteRequestSchema, {})] as const;
    expect(fingerprintOf(ConvertFileRequestSchema, empty[0])).not.toBe(fingerprintOf(MuteRequestSchema, empty[1]));
  });
});

describe("the lock", () => {
  it("outlasts the backend's deadline and four store calls at theirs: 15 s with the defaults", () => {
    expect(retryLockMs(10_000, 1_000)).toBe(15_000);
    expect(retryLockMs(300, 50)).toBe(1_500);
  });
});

/** A store, a clock, the runner, and calls whose work the test drives. */
function setUp() {
  let offset = 0;
  const now = () => 1_800_000_000_000 + offset;
  const store = new MemoryStore({ now });
  const retries = new SafeRetries(store.idempotency, LOCK_MS, now);
  let works = 0;
  const call = (
    fingerprint: string,
    work: (asking: () => void) => Promise<string> = async (asking) => {
      asking();
      return `answer ${works}`;
    },
    key = "k-1",
  ): KeyedCall<string> => ({
    scope: { project: "p", subject: "alice", key },
    fingerprint,
    work: (asking) => {
      works++;
      return work(asking);
    },
    encode: (a) => JSON.stringify({ a }),
    decode: (text) => (JSON.parse(text) as { a?: string }).a,
  });
  return { store, retries, call, works: () => works, advance: (ms: number) => (offset += ms) };
}

const failing = (e: Error, ask: boolean) => async (asking: () => void) => {
  if (ask) asking();
  throw e;
};

describe("safe retries", () => {
  it("the first call does the work; a retry of the same request gets its answer, without the work", async () => {
    const { retries, call, works } = setUp();
    expect(await retries.run(call("f1"))).toBe("answer 1");
    expect(await retries.run(call("f1"))).toBe("answer 1");
    expect(works()).toBe(1);
    expect(await retries.run(call("f1", undefined, "k-2"))).toBe("answer 2");
  });

  it("the same key with another request is idempotency_key_reused, whatever the key's state", async () => {
    const { retries, call } = setUp();
    await retries.run(call("f1"));
    await expect(retries.run(call("f2"))).rejects.toMatchObject({ kind: "idempotency_key_reused" });
    let finish: (a: string) => void = () => {};
    const first = retries.run(call("f3", () => new Promise((resolve) => (finish = resolve)), "k-2"));
    await expect(retries.run(call("f4", undefined, "k-2"))).rejects.toMatchObject({ kind: "idempotency_key_reused" });
    finish("late");
    expect(await first).toBe("late");
  });

  it("while the first call works, a retry is idempotency_key_busy, retry after 1 s; then it gets the answer", async () => {
    const { retries, call, works } = setUp();
    let finish: (a: string) => void = () => {};
    const first = retries.run(call("f1", () => new Promise((resolve) => (finish = resolve))));
    await expect(retries.run(call("f1"))).rejects.toMatchObject({ kind: "idempotency_key_busy", retryAfterSeconds: 1 });
    finish("the answer");
    expect(await first).toBe("the answer");
    expect(await retries.run(call("f1"))).toBe("the answer");
    expect(works()).toBe(1);
  });

  it.each([
    ["a failure before the backend was asked", new Failure("not_found"), false],
    ["Redis down before the backend was asked", new Failure("unavailable"), false],
    ["the backend refused the request (400)", new Failure("invalid", { detail: "resource_url was rejected" }), true],
    ["the backend over its capacity", new Failure("unavailable", { retryAfterSeconds: 1 }), true],
  ])("%s keeps nothing: the key is free, a retry does the work", async (_, failure, ask) => {
    const { retries, call, store, works } = setUp();
    await expect(retries.run(call("f1", failing(failure, ask)))).rejects.toBe(failure);
    expect(store.data.get(store.keys.idempotency("p", "alice", "k-1"))).toBeUndefined();
    expect(await retries.run(call("f1"))).toBe("answer 2");
    expect(works()).toBe(2);
  });

  it.each([
    ["the backend timed out", new Failure("deadline_exceeded")],
    ["the backend answered 5xx or the connection reset", new Failure("unavailable")],
    ["the call was cancelled mid-way", new Error("aborted")],
  ])("%s after it was asked: the key stays locked for the lock, then it is free", async (_, failure) => {
    const { retries, call, works, advance } = setUp();
    const slowFailure = async (asking: () => void) => {
      asking();
      advance(5_000); // the backend call took 5 s
      throw failure;
    };
    await expect(retries.run(call("f1", slowFailure))).rejects.toBe(failure);
    await expect(retries.run(call("f1"))).rejects.toMatchObject({
      kind: "idempotency_key_busy",
      retryAfterSeconds: LOCK_MS / 1000,
    });
    // The lock counts from the failure, not from the claim 5 s before it.
    advance(LOCK_MS - 1000);
    await expect(retries.run(call("f1"))).rejects.toMatchObject({ kind: "idempotency_key_busy", retryAfterSeconds: 1 });
    await expect(retries.run(call("f2"))).rejects.toMatchObject({ kind: "idempotency_key_reused" });
    advance(1000);
    expect(await retries.run(call("f1"))).toBe("answer 2");
    expect(works()).toBe(2);
  });

  it("an unavailable store before the claim: the failure, and no work", async () => {
    const { retries, call, store, works } = setUp();
    store.setUnavailable(true);
    await expect(retries.run(call("f1"))).rejects.toMatchObject({ kind: "unavailable" });
    expect(works()).toBe(0);
  });

  it("the work done but the answer not kept (store gone): the caller still gets its answer", async () => {
    const { retries, call, store } = setUp();
    const answer = await retries.run(
      call("f1", async (asking) => {
        asking();
        store.setUnavailable(true);
        return "made";
      }),
    );
    expect(answer).toBe("made");
  });
});
