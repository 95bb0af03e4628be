/**
 * The read cache serves a passphrase or whiteboard record for at most its TTL
 * after the record changed underneath, never caches failures, and is bounded.
 * Through the public API only, on the injected clock: what is cached shows as
 * the inner store not being asked.
 */
import { expect, test, vi } from "vitest";
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

test("a cached miss is served for the TTL, then a created passphrase is seen", async () => {
  const { inner, cached, advance } = setup();
  expect(await cached.lookupPassphrase("new one")).toBeUndefined();
  await inner.createChannel({ project: "p", channel: "c", hostPassphrase: "new one" });
  advance(999);
  expect(await cached.lookupPassphrase("new one")).toBeUndefined();
  advance(1);
  expect(await cached.lookupPassphrase("new one")).toEqual({ project: "p", channel: "c", role: "host" });
});

test("whiteboard settings follow the same bound, for a record and for a miss", async () => {
  const { inner, cached, advance } = setup();
  await inner.setWhiteboard("p", { region: "eu", credentials: { sdkToken: "t" } });
  expect(await cached.getWhiteboard("p")).toMatchObject({ region: "eu" });
  await inner.clearWhiteboard("p");
  advance(999);
  expect(await cached.getWhiteboard("p")).toMatchObject({ region: "eu" });
  advance(1);
  expect(await cached.getWhiteboard("p")).toBeUndefined();
  await inner.setWhiteboard("p", { region: "sg", credentials: { sdkToken: "t" } });
  advance(999);
  expect(await cached.getWhiteboard("p")).toBeUndefined();
  advance(1);
  expect(await cached.getWhiteboard("p")).toMatchObject({ region: "sg" });
});

test("failures are not cached", async () => {
  const { inner, cached } = setup();
  await inner.createChannel({ project: "p", channel: "c", hostPassphrase: "x" });
  inner.setUnavailable(true);
  await expect(cached.lookupPassphrase("x")).rejects.toBeInstanceOf(Failure);
  inner.setUnavailable(false);
  expect(await cached.lookupPassphrase("x")).toBeDefined();
});

test("the cache holds at most READ_CACHE_MAX_ENTRIES passphrases, the oldest going first", async () => {
  const { inner, cached } = setup();
  const asked = vi.spyOn(inner, "lookupPassphrase");
  for (let i = 0; i <= READ_CACHE_MAX_ENTRIES; i++) await cached.lookupPassphrase(`p${i}`);
  expect(asked).toHaveBeenCalledTimes(READ_CACHE_MAX_ENTRIES + 1);
  asked.mockClear();
  // The newest READ_CACHE_MAX_ENTRIES are all still cached...
  for (let i = 1; i <= READ_CACHE_MAX_ENTRIES; i++) await cached.lookupPassphrase(`p${i}`);
  expect(asked).not.toHaveBeenCalled();
  // ...and the first one made room for them.
  await cached.lookupPassphrase("p0");
  expect(asked).toHaveBeenCalledExactlyOnceWith("p0");
});
