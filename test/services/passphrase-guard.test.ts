/**
 * MissLimitGuard (src/services/passphrase-guard.ts) through PstnControl on the
 * in-memory store with a clock the test moves: the window slides, so no span
 * of `windowSeconds` ever holds more than `attempts` judged misses, not even
 * one that straddles the moment a fixed window would have started over.
 */
import { create } from "@bufbuild/protobuf";
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { MuteRequestSchema } from "../../gen/channel/v1/pstn_pb.js";
import type { Failure } from "../../src/services/failure.js";
import { MissLimitGuard } from "../../src/services/passphrase-guard.js";
import { provenHolderKey } from "../../src/services/proven-holders.js";
import { PstnControl } from "../../src/services/pstn/mute.js";
import { MemoryStore } from "../../src/store/memory/store.js";
import { ReadCachedStore } from "../../src/store/read-cache.js";
import { callerOf } from "./store-contents.js";

const NOW = 1_800_000_000_000;
const LIMIT = 5;
const WINDOW_MS = 60_000;

async function world() {
  const clock = { now: NOW };
  const store = new MemoryStore({ now: () => clock.now });
  await store.createChannel({ project: "p", channel: "weekly", hostPassphrase: "the-host-passphrase-1" });
  const guard = new MissLimitGuard(store, { attempts: LIMIT, windowSeconds: WINDOW_MS / 1000 });
  const control = new PstnControl(store, guard, () => clock.now);
  /** One wrong passphrase: "judged" (permission_denied) or "refused" (rate_limited). */
  const guess = async (i: number) => {
    const req = create(MuteRequestSchema, { passphrase: `wrong-${i}`, uid: "u", mute: true });
    const e = await control.mute(callerOf("p", [], "guesser"), req).catch((e: unknown) => e);
    return (e as { kind?: string }).kind === "permission_denied" ? "judged" : "refused";
  };
  /** Sends `n` guesses at `at` ms; how many were judged. */
  const burst = async (at: number, n: number) => {
    clock.now = at;
    const outcomes = await Promise.all(Array.from({ length: n }, (_, i) => guess(i)));
    return outcomes.filter((o) => o === "judged").length;
  };
  return { burst };
}

it("a burst on both sides of where a fixed window would start over is judged at most the limit", async () => {
  const { burst } = await world();
  expect(await burst(NOW, 1)).toBe(1);
  const before = await burst(NOW + WINDOW_MS - 1, 2 * LIMIT);
  const after = await burst(NOW + WINDOW_MS + 1, 2 * LIMIT);
  // Both bursts lie within one window: at most LIMIT judged between them.
  expect(before).toBe(LIMIT - 1);
  expect(before + after).toBeLessThanOrEqual(LIMIT);
  // The first miss left the window, and only it: exactly one more is judged.
  expect(after).toBe(1);
});

it("every guess counts for one whole window from when it was taken, then frees up", async () => {
  const { burst } = await world();
  expect(await burst(NOW, 2)).toBe(2);
  expect(await burst(NOW + 10_000, 2 * LIMIT)).toBe(LIMIT - 2);
  expect(await burst(NOW + WINDOW_MS - 1, 1)).toBe(0);
  expect(await burst(NOW + WINDOW_MS, 2 * LIMIT)).toBe(2);
  expect(await burst(NOW + WINDOW_MS + 9_999, 1)).toBe(0);
  expect(await burst(NOW + WINDOW_MS + 10_000, 2 * LIMIT)).toBe(LIMIT - 2);
});

describe("proven holders", () => {
  const HOST = "the-host-passphrase-1";
  const ROTATED = "the-rotated-passphrase-2";
  const CACHE_MS = 1_000;

  /** As production: the services read through the read cache, the guard writes the store itself. */
  async function holders() {
    const clock = { now: NOW };
    const store = new MemoryStore({ now: () => clock.now });
    await store.createChannel({ project: "p", channel: "weekly", hostPassphrase: HOST });
    const cached = new ReadCachedStore(store, CACHE_MS, () => clock.now);
    const guard = new MissLimitGuard(
      store,
      { attempts: LIMIT, windowSeconds: WINDOW_MS / 1000, provenSeconds: 600 },
      () => clock.now,
    );
    const control = new PstnControl(cached, guard, () => clock.now);
    const alice = callerOf("p", [], "alice");
    const mute = (passphrase: string, uid = "u") =>
      control.mute(alice, create(MuteRequestSchema, { passphrase, uid, mute: true })).then(
        () => "ok",
        (e: unknown) => (e as { kind?: string }).kind,
      );
    const guesses = () => {
      const entry = store.data.get(store.keys.guesses(JSON.stringify(["p", "alice"])));
      return entry?.type === "zset" ? entry.scores.size : 0;
    };
    return { clock, store, guard, mute, guesses };
  }

  it("the memo holds the caller and the passphrase's sha256, never the passphrase", async () => {
    const { guard, mute } = await holders();
    expect(await mute(HOST)).toBe("ok");
    const keys = guard.holders?.keys() ?? [];
    const sha = createHash("sha256").update(HOST).digest("hex");
    expect(keys).toEqual([JSON.stringify(["p", "alice", sha])]);
    expect(keys.join("")).not.toContain(HOST);
    expect(provenHolderKey(callerOf("p", [], "alice"), HOST)).toBe(keys[0]);
  });

  it("a holder's calls take no guess, however many are in flight, even once its guesses are used up", async () => {
    const { mute, guesses } = await holders();
    expect(await mute(HOST)).toBe("ok");
    for (let i = 0; i < LIMIT; i++) expect(await mute(`wrong-${i}`)).toBe("permission_denied");
    expect(await mute("one-more-wrong")).toBe("rate_limited");
    const outcomes = await Promise.all(Array.from({ length: 40 }, (_, i) => mute(HOST, `dial-in-${i}`)));
    expect(outcomes).toEqual(Array(40).fill("ok"));
    expect(guesses()).toBe(LIMIT);
  });

  it("a rotated passphrase is refused within PASSPHRASE_CACHE_MS, its misses count, and it stops being proven", async () => {
    const { clock, store, guard, mute, guesses } = await holders();
    expect(await mute(HOST)).toBe("ok");
    expect(guesses()).toBe(0);
    await store.deleteChannel("p", "weekly");
    await store.createChannel({ project: "p", channel: "weekly", hostPassphrase: ROTATED });
    // Within the read cache's bound the old one may still open the channel...
    clock.now = NOW + CACHE_MS - 1;
    expect(await mute(HOST)).toBe("ok");
    // ...not after it: refused, and the miss is counted.
    clock.now = NOW + CACHE_MS;
    expect(await mute(HOST)).toBe("permission_denied");
    expect(guesses()).toBe(1);
    expect(guard.holders?.keys()).toEqual([]);
    for (let i = 1; i < LIMIT; i++) expect(await mute(HOST)).toBe("permission_denied");
    expect(guesses()).toBe(LIMIT);
    expect(await mute(HOST)).toBe("rate_limited");
    // The new passphrase works (proven through a guess, while one is free) only once a guess frees up.
    expect(await mute(ROTATED)).toBe("rate_limited");
  });

  it("a caller stays proven until GUESS_PROVEN_SECONDS after its last right call", async () => {
    const { clock, guard, mute } = await holders();
    expect(await mute(HOST)).toBe("ok");
    clock.now = NOW + 599_000;
    expect(await mute(HOST)).toBe("ok");
    clock.now = NOW + 599_000 + 599_999;
    expect(guard.holders?.keys().length).toBe(1);
    expect(guard.holders?.has(provenHolderKey(callerOf("p", [], "alice"), HOST))).toBe(true);
    clock.now = NOW + 599_000 + 600_000;
    expect(guard.holders?.has(provenHolderKey(callerOf("p", [], "alice"), HOST))).toBe(false);
  });

  it("a burst beyond the limit waits in line while the caller's calls are judged; once those are misses, the rest are refused until the window's end", async () => {
    const { guard } = await holders();
    const alice = callerOf("p", [], "alice");
    let open = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    let lookups = 0;
    const slowLookup = async () => {
      lookups++;
      await gate;
      return undefined;
    };
    const calls = Array.from({ length: 3 * LIMIT }, () => guard.lookUp(alice, "not-a-passphrase", slowLookup));
    await new Promise((r) => setTimeout(r, 50));
    expect(lookups).toBe(LIMIT);
    open();
    for (const c of calls.slice(0, LIMIT)) await (await c).guess.keep();
    const refusals = await Promise.all(
      calls.slice(LIMIT).map((c) =>
        c.then(
          () => "granted",
          (e: Failure) => e,
        ),
      ),
    );
    expect(refusals.map((e) => (e as Failure).retryAfterSeconds)).toEqual(Array(2 * LIMIT).fill(WINDOW_MS / 1000));
    expect(lookups).toBe(LIMIT);
  });

  it("a line that does not move is answered within seconds (429, retry in 1 s), never waited out", async () => {
    const { guard } = await holders();
    const alice = callerOf("p", [], "alice");
    const never = new Promise<undefined>(() => {});
    // LIMIT calls whose lookups never end hold every place in the line.
    for (let i = 0; i < LIMIT; i++) void guard.lookUp(alice, `stuck-${i}`, () => never);
    const started = Date.now();
    const refused = await guard.lookUp(alice, "next", async () => undefined).catch((e: Failure) => e);
    expect((refused as Failure).kind).toBe("rate_limited");
    expect((refused as Failure).retryAfterSeconds).toBe(1);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("a caller using many right passphrases at once, each for the first time, is slowed, never refused", async () => {
    const { store, mute } = await holders();
    const passphrases = Array.from({ length: 8 * LIMIT }, (_, i) => `first-use-passphrase-${i}`);
    for (const [i, hostPassphrase] of passphrases.entries()) {
      await store.createChannel({ project: "p", channel: `c${i}`, hostPassphrase });
    }
    expect(await Promise.all(passphrases.map((p) => mute(p)))).toEqual(passphrases.map(() => "ok"));
  });

  it("a call whose guesses another instance holds waits for them, and goes on when they are given back", async () => {
    const { store, guard } = await holders();
    const other = new MissLimitGuard(store, { attempts: LIMIT, windowSeconds: WINDOW_MS / 1000 });
    const alice = callerOf("p", [], "alice");
    let open = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const held = Array.from({ length: LIMIT }, () =>
      other.lookUp(alice, HOST, async (project, p) => {
        await gate;
        return store.lookupPassphrase(project, p);
      }),
    );
    const waiting = guard.lookUp(alice, HOST, (project, p) => store.lookupPassphrase(project, p));
    await new Promise((r) => setTimeout(r, 100));
    open();
    for (const c of held) await (await c).guess.giveBack();
    const { record, guess } = await waiting;
    expect(record?.channel).toBe("weekly");
    await guess.giveBack();
  });
});
