/**
 * The read cache serves a passphrase or whiteboard record for at most its TTL
 * after the record changed underneath, never caches failures, and is bounded:
 * least recently used first, with misses in a smaller room of their own so
 * that guessing cannot push real channels out.
 * Through the public API only, on the injected clock: what is cached shows as
 * the inner store not being asked.
 */
import { expect, test, vi } from "vitest";
import { Failure } from "../../src/services/failure.js";
import { MemoryStore } from "../../src/store/memory/store.js";
import { READ_CACHE_MAX_ENTRIES, READ_CACHE_MAX_MISSES, ReadCachedStore } from "../../src/store/read-cache.js";

function setup() {
  let now = 1_000_000;
  const inner = new MemoryStore({ now: () => now });
  const cached = new ReadCachedStore(inner, 1000, () => now);
  return { inner, cached, advance: (ms: number) => (now += ms) };
}

test("a deleted passphrase is served at most for the TTL", async () => {
  const { inner, cached, advance } = setup();
  await inner.createChannel({ project: "p", channel: "c", hostPassphrase: "secret one" });
  expect(await cached.lookupPassphrase("p", "secret one")).toEqual({ project: "p", channel: "c", role: "host" });
  await inner.deleteChannel("p", "c");
  advance(999);
  expect(await cached.lookupPassphrase("p", "secret one")).toBeDefined();
  advance(1);
  expect(await cached.lookupPassphrase("p", "secret one")).toBeUndefined();
});

test("a cached miss is served for the TTL, then a created passphrase is seen", async () => {
  const { inner, cached, advance } = setup();
  expect(await cached.lookupPassphrase("p", "new one")).toBeUndefined();
  await inner.createChannel({ project: "p", channel: "c", hostPassphrase: "new one" });
  advance(999);
  expect(await cached.lookupPassphrase("p", "new one")).toBeUndefined();
  advance(1);
  expect(await cached.lookupPassphrase("p", "new one")).toEqual({ project: "p", channel: "c", role: "host" });
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
  await expect(cached.lookupPassphrase("p", "x")).rejects.toBeInstanceOf(Failure);
  inner.setUnavailable(false);
  expect(await cached.lookupPassphrase("p", "x")).toBeDefined();
});

/** Every passphrase `ok…` names a channel, every other one is a miss: no channels to create. */
function withKnownPassphrases(inner: MemoryStore) {
  return vi
    .spyOn(inner, "lookupPassphrase")
    .mockImplementation(async (_project, passphrase) =>
      passphrase.startsWith("ok") ? { project: "p", channel: passphrase, role: "host" } : undefined,
    );
}

test("the cache holds at most READ_CACHE_MAX_ENTRIES records, the least recently used going first", async () => {
  const { inner, cached } = setup();
  const asked = withKnownPassphrases(inner);
  for (let i = 0; i < READ_CACHE_MAX_ENTRIES; i++) await cached.lookupPassphrase("p", `ok${i}`);
  // ok0 is read again: the least recently used is now ok1, and the next record pushes it out.
  await cached.lookupPassphrase("p", "ok0");
  await cached.lookupPassphrase("p", "ok-new");
  expect(asked).toHaveBeenCalledTimes(READ_CACHE_MAX_ENTRIES + 1);
  asked.mockClear();
  await cached.lookupPassphrase("p", "ok0");
  for (let i = 2; i < READ_CACHE_MAX_ENTRIES; i++) await cached.lookupPassphrase("p", `ok${i}`);
  await cached.lookupPassphrase("p", "ok-new");
  expect(asked).not.toHaveBeenCalled();
  await cached.lookupPassphrase("p", "ok1");
  expect(asked).toHaveBeenCalledExactlyOnceWith("p", "ok1");
});

test("misses have their own room of READ_CACHE_MAX_MISSES, the least recently used going first", async () => {
  const { inner, cached } = setup();
  const asked = withKnownPassphrases(inner);
  for (let i = 0; i <= READ_CACHE_MAX_MISSES; i++) await cached.lookupPassphrase("p", `wrong${i}`);
  expect(asked).toHaveBeenCalledTimes(READ_CACHE_MAX_MISSES + 1);
  asked.mockClear();
  for (let i = 1; i <= READ_CACHE_MAX_MISSES; i++) await cached.lookupPassphrase("p", `wrong${i}`);
  expect(asked).not.toHaveBeenCalled();
  await cached.lookupPassphrase("p", "wrong0");
  expect(asked).toHaveBeenCalledExactlyOnceWith("p", "wrong0");
});

test("a flood of distinct wrong passphrases does not push a real channel out", async () => {
  const { inner, cached } = setup();
  await inner.createChannel({ project: "p", channel: "c", hostPassphrase: "the real one" });
  const asked = vi.spyOn(inner, "lookupPassphrase");
  expect(await cached.lookupPassphrase("p", "the real one")).toMatchObject({ channel: "c" });
  // More guesses than the whole cache holds, none of them ever repeated.
  for (let i = 0; i <= READ_CACHE_MAX_ENTRIES; i++)
    expect(await cached.lookupPassphrase("p", `guess ${i}`)).toBeUndefined();
  asked.mockClear();
  expect(await cached.lookupPassphrase("p", "the real one")).toMatchObject({ channel: "c" });
  expect(asked).not.toHaveBeenCalled();
});

test("the channel directory is the inner store's, uncached; a rotated passphrase still opens for at most the TTL", async () => {
  const { inner, cached, advance } = setup();
  expect(cached.channels).toBe(inner.channels);
  const channel = {
    project: "p",
    channel: "rotated",
    passphrases: [{ role: "host" as const, passphrase: "before" }],
    createdBy: "alice",
    createdAt: 1,
    expireAt: undefined,
  };
  expect(await cached.channels.create(channel)).toEqual({ kind: "created" });
  expect(await cached.lookupPassphrase("p", "before")).toBeDefined();
  expect(await cached.channels.rotate("p", "rotated", "host", "after")).toEqual({ kind: "rotated" });
  expect((await cached.channels.get("p", "rotated"))?.roles).toEqual(["host"]);
  advance(999);
  expect(await cached.lookupPassphrase("p", "before")).toBeDefined();
  advance(1);
  expect(await cached.lookupPassphrase("p", "before")).toBeUndefined();
  expect(await cached.lookupPassphrase("p", "after")).toMatchObject({ channel: "rotated", role: "host" });
});

test("a passphrase of a channel with an expiry is served no later than that expiry, whatever the TTL", async () => {
  const { inner, cached, advance } = setup();
  const expireAt = 1_000_000 + 300;
  const created = await inner.channels.create({
    project: "p",
    channel: "c",
    passphrases: [{ role: "host", passphrase: "expiring passphrase" }],
    createdBy: "test",
    createdAt: 1_000_000,
    expireAt,
  });
  expect(created).toEqual({ kind: "created" });
  expect(await cached.lookupPassphrase("p", "expiring passphrase")).toEqual({
    project: "p",
    channel: "c",
    role: "host",
    expireAt,
  });
  advance(299);
  expect(await cached.lookupPassphrase("p", "expiring passphrase")).toBeDefined();
  advance(1); // the channel's expiry, well within the 1 s TTL
  expect(await cached.lookupPassphrase("p", "expiring passphrase")).toBeUndefined();
});
