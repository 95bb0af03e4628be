/**
 * The read cache serves a passphrase or whiteboard record for at most its TTL
 * after the record changed underneath, never caches failures, and is bounded.
 */
import { expect, test } from "vitest";
import { Failure } from "../../src/services/failure.js";
import { MemoryStore } from "../../src/store/memory/store.js";
import { READ_CACHE_MAX_ENTRIES, ReadCachedStore } from "../../src/store/read-cache.js";

function setup() {
  let now = 1_000_000;
  const inner = new MemoryStore({ now: () => now });
  const cached = new ReadCachedStore(inner, 1000, () => now);
  return { inner, cached, advance: (ms: number) => (now += ms) };
}

test("a deleted passphrase is served at most for the TTL", async () => {
  const { inner, cached, advance } = setup();
  await inner.createChannel({ project: "p", channel: "c", hostPassphrase: "secret one" });
  expect(await cached.lookupPassphrase("secret one")).toEqual({ project: "p", channel: "c", role: "host" });
  await inner.deleteChannel("p", "c");
  advance(999);
  expect(await cached.lookupPassphrase("secret one")).toBeDefined();
  advance(1);
  expect(await cached.lookupPassphrase("secret one")).toBeUndefined();
});

test("a created passphrase is seen within the TTL after a cached miss", async () => {
  const { inner, cached, advance } = setup();
  expect(await cached.lookupPassphrase("new one")).toBeUndefined();
  await inner.createChannel({ project: "p", channel: "c", hostPassphrase: "new one" });
  advance(1000);
  expect(await cached.lookupPassphrase("new one")).toEqual({ project: "p", channel: "c", role: "host" });
});

test("whiteboard settings follow the same bound", async () => {
  const { inner, cached, advance } = setup();
  await inner.setWhiteboard("p", { region: "eu", credentials: { sdkToken: "t" } });
  expect(await cached.getWhiteboard("p")).toBeDefined();
  await inner.clearWhiteboard("p");
  expect(await cached.getWhiteboard("p")).toBeDefined();
  advance(1000);
  expect(await cached.getWhiteboard("p")).toBeUndefined();
});

test("failures are not cached", async () => {
  const { inner, cached } = setup();
  await inner.createChannel({ project: "p", channel: "c", hostPassphrase: "x" });
  inner.setUnavailable(true);
  await expect(cached.lookupPassphrase("x")).rejects.toBeInstanceOf(Failure);
  inner.setUnavailable(false);
  expect(await cached.lookupPassphrase("x")).toBeDefined();
});

test("the cache is bounded", async () => {
  const { cached } = setup();
  for (let i = 0; i < READ_CACHE_MAX_ENTRIES + 10; i++) await cached.lookupPassphrase(`p${i}`);
  const size = (cached as unknown as { passphrases: { size: number } }).passphrases.size;
  expect(size).toBe(READ_CACHE_MAX_ENTRIES);
});
