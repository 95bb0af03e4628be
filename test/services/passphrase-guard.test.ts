/**
 * MissLimitGuard (src/services/passphrase-guard.ts) through PstnControl on the
 * in-memory store with a clock the test moves: the window slides, so no span
 * of `windowSeconds` ever holds more than `attempts` judged misses, not even
 * one that straddles the moment a fixed window would have started over.
 */
import { create } from "@bufbuild/protobuf";
import { expect, it } from "vitest";
import { MuteRequestSchema } from "../../gen/channel/v1/pstn_pb.js";
import { MissLimitGuard } from "../../src/services/passphrase-guard.js";
import { PstnControl } from "../../src/services/pstn/mute.js";
import { MemoryStore } from "../../src/store/memory/store.js";
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
