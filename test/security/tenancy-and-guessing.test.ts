/**
 * A token of project A never acts on, nor learns about, project B; and a
 * caller that keeps guessing passphrases is locked out (429 + Retry-After),
 * with the counters in Redis so two instances share them.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { JwtAuthenticator } from "../../src/auth/jwt.js";
import { NetlessConversionClient } from "../../src/conversion/netless-client.js";
import { silentLogger } from "../../src/log.js";
import { type Server, startService } from "../../src/compose.js";
import { MissLimitGuard } from "../../src/services/passphrase-guard.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";

let bl: Boardline;
let twin: Server;

beforeAll(async () => {
  bl = await startBoardline({ guard: (store) => new MissLimitGuard(store, { attempts: 3, windowSeconds: 30 }) });
  // A second instance on the same Redis (same prefix, same secret).
  twin = await startService({
    host: "127.0.0.1",
    port: 0,
    store: bl.store,
    authenticator: new JwtAuthenticator({
      key: { kind: "secret", secret: bl.secret },
      algorithms: ["HS256"],
      projectClaim: "project_id",
    }),
    backend: new NetlessConversionClient({ baseUrl: bl.simulator.url, timeoutMs: 2000, logger: silentLogger() }),
    guard: new MissLimitGuard(bl.store, { attempts: 3, windowSeconds: 30 }),
    logger: silentLogger(),
    maxBodyBytes: 65536,
    corsOrigins: [],
  });
});
afterAll(async () => {
  await twin.shutdown(500);
  await bl.close();
});

async function post(base: string, path: string, token: string, body: unknown) {
  const res = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return {
    status: res.status,
    body: (await res.json()) as { error?: { code: number; message: string } },
    retryAfter: res.headers.get("retry-after"),
  };
}

describe("tenant isolation", () => {
  test("project A cannot mute in project B, and cannot tell B's passphrase from an unknown one", async () => {
    const a = await bl.token(bl.world.project, "alice");
    const withB = await post(bl.url, "/v1/channel/pstn/mute", a, {
      uid: "u",
      passphrase: bl.world.otherHostPassphrase,
      mute: true,
    });
    const unknown = await post(bl.url, "/v1/channel/pstn/mute", a, {
      uid: "u",
      passphrase: "no such passphrase",
      mute: true,
    });
    expect(withB.status).toBe(403);
    expect(withB.body).toEqual(unknown.body);
    expect(await bl.store.getMuteState(bl.world.otherProject, bl.world.otherChannel)).toEqual({});
  });

  test("project A cannot convert with project B's passphrase; the answer equals an unknown passphrase's", async () => {
    const a = await bl.token(bl.world.project, "alice2");
    const body = (passphrase: string) => ({
      resource_url: "https://example.com/a.pdf",
      passphrase,
      conversion_type: "static",
    });
    const seen = bl.simulator.requests().length;
    const withB = await post(bl.url, "/v1/whiteboard/fileconvert", a, body(bl.world.otherHostPassphrase));
    const unknown = await post(bl.url, "/v1/whiteboard/fileconvert", a, body("no such passphrase"));
    expect(withB.status).toBe(404);
    expect(withB.body).toEqual(unknown.body);
    expect(bl.simulator.requests().length).toBe(seen);
  });

  test("project B's token works with B's passphrase (the control)", async () => {
    const b = await bl.token(bl.world.otherProject, "bob");
    const r = await post(bl.url, "/v1/channel/pstn/mute", b, {
      uid: "u",
      passphrase: bl.world.otherHostPassphrase,
      mute: true,
    });
    expect(r.status).toBe(200);
  });
});

describe("passphrase guessing", () => {
  test("after 3 misses the caller gets 429 with Retry-After, even with the right passphrase, on both instances", async () => {
    const t = await bl.token(bl.world.project, "guesser");
    for (let i = 0; i < 3; i++) {
      const r = await post(bl.url, "/v1/channel/pstn/mute", t, { uid: "u", passphrase: `guess ${i}`, mute: true });
      expect(r.status).toBe(403);
    }
    const locked = await post(bl.url, "/v1/channel/pstn/mute", t, {
      uid: "u",
      passphrase: bl.world.hostPassphrase,
      mute: true,
    });
    expect(locked.status).toBe(429);
    expect(locked.body).toEqual({ error: { code: 429, message: expect.stringMatching(/too many/) } });
    expect(Number(locked.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(Number(locked.retryAfter)).toBeLessThanOrEqual(30);
    const onTwin = await post(twin.url, "/v1/whiteboard/fileconvert", t, {
      resource_url: "https://example.com/a.pdf",
      passphrase: bl.world.attendeePassphrase,
      conversion_type: "static",
    });
    expect(onTwin.status).toBe(429);
    expect(await bl.store.getMuteState(bl.world.project, bl.world.channel)).not.toHaveProperty("u");
  });

  test("another caller of the same project is not locked out", async () => {
    const t = await bl.token(bl.world.project, "innocent");
    const r = await post(bl.url, "/v1/channel/pstn/mute", t, {
      uid: "w",
      passphrase: bl.world.hostPassphrase,
      mute: true,
    });
    expect(r.status).toBe(200);
  });
});
