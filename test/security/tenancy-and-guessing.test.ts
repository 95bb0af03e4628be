/**
 * A token of project A never acts on, nor learns about, project B; and a
 * caller that keeps guessing passphrases is locked out (429 + Retry-After),
 * with the counters in Redis so two instances share them.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { MissLimitGuard } from "../../src/services/passphrase-guard.js";
import type { AdminStore } from "../../src/services/ports.js";
import { type Boardline, startBoardline, startTwin } from "../harness/boardline.js";
import { parseBody, postJson } from "../harness/http.js";
import { convertBody, muteBody } from "../harness/request-bodies.js";
import { ROUTES } from "../harness/routes.js";
import { STATE_ROUTE } from "../e2e/helpers/pstn-state.js";

/** Three wrong passphrases in 30 s lock a caller out. */
const guard = (store: AdminStore) => new MissLimitGuard(store, { attempts: 3, windowSeconds: 30 });

let bl: Boardline;
let twin: Boardline;

beforeAll(async () => {
  bl = await startBoardline({ guard });
  // A second instance on the same Redis (same prefix, same secret).
  twin = await startTwin(bl, { guard });
});
afterAll(async () => {
  await twin.close();
  await bl.close();
});

/** Posts `body` with `token` to `on` (an instance); the status, the parsed body and Retry-After. */
async function post(on: Boardline, path: string, token: string, body: unknown) {
  const res = await postJson(on, path, body, { token });
  return {
    status: res.status,
    body: parseBody<{ error?: { code: number; message: string } }>(res),
    retryAfter: res.headers.get("retry-after"),
  };
}

describe("tenant isolation", () => {
  test("project A cannot mute in project B, and cannot tell B's passphrase from an unknown one", async () => {
    const a = await bl.token(bl.world.project, "alice");
    const withB = await post(bl, ROUTES.mute, a, muteBody(bl, { uid: "u", passphrase: bl.world.otherHostPassphrase }));
    const unknown = await post(bl, ROUTES.mute, a, muteBody(bl, { uid: "u", passphrase: "no such passphrase" }));
    expect(withB.status).toBe(403);
    expect(withB.body).toEqual(unknown.body);
    expect(await bl.store.getMuteState(bl.world.otherProject, bl.world.otherChannel)).toEqual({});
  });

  test("project A cannot convert with project B's passphrase; the answer equals an unknown passphrase's", async () => {
    const a = await bl.token(bl.world.project, "alice2");
    const body = (passphrase: string) => convertBody(bl, { passphrase });
    const seen = bl.simulator.requests().length;
    const withB = await post(bl, ROUTES.convert, a, body(bl.world.otherHostPassphrase));
    const unknown = await post(bl, ROUTES.convert, a, body("no such passphrase"));
    expect(withB.status).toBe(404);
    expect(withB.body).toEqual(unknown.body);
    expect(bl.simulator.requests().length).toBe(seen);
  });

  test("project B's token works with B's passphrase (the control)", async () => {
    const b = await bl.token(bl.world.otherProject, "bob");
    const r = await post(bl, ROUTES.mute, b, muteBody(bl, { uid: "u", passphrase: bl.world.otherHostPassphrase }));
    expect(r.status).toBe(200);
  });
});

describe("passphrase guessing", () => {
  test("after 3 misses the caller gets 429 with Retry-After, even with the right passphrase, on both instances", async () => {
    const t = await bl.token(bl.world.project, "guesser");
    for (let i = 0; i < 3; i++) {
      const r = await post(bl, ROUTES.mute, t, muteBody(bl, { uid: "u", passphrase: `guess ${i}` }));
      expect(r.status).toBe(403);
    }
    const locked = await post(bl, ROUTES.mute, t, muteBody(bl, { uid: "u", passphrase: bl.world.hostPassphrase }));
    expect(locked.status).toBe(429);
    expect(locked.body).toEqual({ error: { code: 429, message: expect.stringMatching(/too many/) } });
    expect(Number(locked.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(locked.retryAfter)).toBeLessThanOrEqual(30);
    const onTwin = await post(twin, ROUTES.convert, t, convertBody(bl, { passphrase: bl.world.attendeePassphrase }));
    expect(onTwin.status).toBe(429);
    expect(await bl.store.getMuteState(bl.world.project, bl.world.channel)).not.toHaveProperty("u");
  });

  test("another caller of the same project is not locked out", async () => {
    const t = await bl.token(bl.world.project, "innocent");
    const r = await post(bl, ROUTES.mute, t, muteBody(bl, { uid: "w", passphrase: bl.world.hostPassphrase }));
    expect(r.status).toBe(200);
  });

  test("GetPstnState misses count toward the same limit, and the lock-out refuses reads and mutes alike", async () => {
    const t = await bl.token(bl.world.project, "state-guesser");
    const read = (on: Boardline, passphrase: string) => post(on, STATE_ROUTE, t, { passphrase });
    expect((await read(bl, bl.world.attendeePassphrase)).status).toBe(200);
    expect((await read(bl, "guess a")).status).toBe(403);
    expect((await read(twin, bl.world.otherHostPassphrase)).status).toBe(403);
    // The third miss is a mute's: one counter for both.
    const miss = await post(bl, ROUTES.mute, t, muteBody(bl, { uid: "g", passphrase: "guess b" }));
    expect(miss.status).toBe(403);

    const locked = await read(twin, bl.world.hostPassphrase);
    expect(locked.status).toBe(429);
    expect(Number(locked.retryAfter)).toBeGreaterThanOrEqual(1);
    const mute = await post(bl, ROUTES.mute, t, muteBody(bl, { uid: "g", passphrase: bl.world.hostPassphrase }));
    expect(mute.status).toBe(429);
    expect(await bl.store.getMuteState(bl.world.project, bl.world.channel)).not.toHaveProperty("g");
  });

  test("a channel-id read refused for want of scope guesses no passphrase and is not counted", async () => {
    const t = await bl.token(bl.world.project, "scopeless");
    for (let i = 0; i < 5; i++) {
      expect((await post(bl, STATE_ROUTE, t, { channel_id: bl.world.channel })).status).toBe(403);
    }
    expect((await post(bl, STATE_ROUTE, t, { passphrase: bl.world.hostPassphrase })).status).toBe(200);
  });
});
