/**
 * GetPstnState over every protocol (JSON h1/h2, Connect h1/h2 binary and
 * JSON, gRPC-Web h1/h2, gRPC via connect-es and via @grpc/grpc-js): the
 * snapshot agrees with the Redis records (mute hash, meta hash, the newest
 * stream entry), whoever may read it reads the same thing, and every refusal
 * lands on its row of the error table — scopes, tenancy, bad requests.
 */
import type { JsonObject } from "@bufbuild/protobuf";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { postJson } from "../harness/http.js";
import { eventsKey, muteKey, muteMetaKey, rawRedis } from "../harness/redis-state.js";
import { muteBody } from "../harness/request-bodies.js";
import { ROUTES } from "../harness/routes.js";
import { readState, STATE_PROTOCOLS, STATE_ROUTE, scopedToken } from "./helpers/pstn-state.js";

let bl: Boardline;
let redis: Redis;
/** Tokens of project A: plain (host), and of scope pstn.gateway; project B's gateway. */
let host: string;
let gateway: string;
let otherGateway: string;

beforeAll(async () => {
  bl = await startBoardline();
  redis = rawRedis(bl);
  const w = bl.world;
  host = await bl.token(w.project, "host-1");
  gateway = await scopedToken(bl, w.project, "gateway-1", ["pstn.gateway"]);
  otherGateway = await scopedToken(bl, w.otherProject, "gateway-b", ["pstn.gateway"]);
  // Project B has a channel of the same name as A's with a state of its own: a channel id never crosses projects.
  await bl.store.setMute({ project: w.otherProject, channel: w.channel, uid: "b-only", mute: true, by: "b", at: 1 });
  for (const [uid, muted] of [
    ["pstn-2", true],
    ["pstn-1", true],
    ["pstn-3", false],
    ["pstn-2", false],
  ] as const) {
    const res = await postJson(bl, ROUTES.mute, muteBody(bl, { uid, mute: muted }), { token: host });
    expect(res.status, res.text).toBe(200);
  }
});
afterAll(async () => {
  redis?.disconnect();
  await bl?.close();
});

/** The policy of a channel nobody set one for, as every protocol renders it. */
const NO_POLICY = { mute_on_join: false, allow_self_unmute: true };
/** The line's fields of a participant a host muted and who is not on the line (no gateway reports here). */
const NOBODY_ON_LINE = { on_line: false, caller_id: "", hand_raised: false };

/** The snapshot the Redis records say the world channel is in, as the JSON route renders it. */
async function expectedState(): Promise<JsonObject> {
  const [mute, meta, newest] = await Promise.all([
    redis.hgetall(muteKey(bl)),
    redis.hgetall(muteMetaKey(bl)),
    redis.xrevrange(eventsKey(bl), "+", "-", "COUNT", 1),
  ]);
  const participants = Object.keys(mute)
    .sort()
    .map((uid) => {
      const m = JSON.parse(meta[uid] ?? "{}") as { at: number; by: string };
      return {
        uid,
        mute: mute[uid] === "1",
        updated_at: new Date(m.at).toISOString(),
        updated_by: m.by,
        ...NOBODY_ON_LINE,
        setter: "PSTN_SETTER_HOST",
      };
    });
  return { channel_id: bl.world.channel, participants, as_of_event_id: newest[0]?.[0] ?? "0-0", policy: NO_POLICY };
}

/** Timestamps compared as instants (proto JSON may print 0, 3, 6 or 9 fractional digits). */
function instants(state: JsonObject): unknown {
  const participants = (state["participants"] as JsonObject[]).map((p) => ({
    ...p,
    updated_at: Date.parse(String(p["updated_at"])),
  }));
  return { ...state, participants };
}

describe.each(STATE_PROTOCOLS)("%s", (protocol) => {
  test("host passphrase, attendee passphrase and a pstn.gateway token by channel id read the same snapshot", async () => {
    const w = bl.world;
    const expected = await expectedState();
    expect((expected["participants"] as unknown[]).length).toBe(3);
    for (const [body, token] of [
      [{ passphrase: w.hostPassphrase }, host],
      [{ passphrase: w.attendeePassphrase }, host],
      [{ channel_id: w.channel }, gateway],
      [{ passphrase: w.attendeePassphrase }, gateway],
    ] as const) {
      const answer = await readState(bl, protocol, body, token);
      expect(answer.ok, JSON.stringify(answer)).toBe(true);
      if (answer.ok) expect(instants(answer.state)).toEqual(instants(expected));
    }
    const answer = await readState(bl, protocol, { channel_id: w.channel }, gateway);
    expect(answer).toMatchObject({
      ok: true,
      state: {
        participants: [
          { uid: "pstn-1", mute: true, updated_by: "host-1" },
          { uid: "pstn-2", mute: false, updated_by: "host-1" },
          { uid: "pstn-3", mute: false, updated_by: "host-1" },
        ],
      },
    });
  });

  test("a channel id of another project's channel, or of none, reads empty", async () => {
    const w = bl.world;
    const empty = (channel: string) => ({
      ok: true,
      state: { channel_id: channel, participants: [], as_of_event_id: "0-0", policy: NO_POLICY },
    });
    expect(await readState(bl, protocol, { channel_id: w.otherChannel }, gateway)).toEqual(empty(w.otherChannel));
    expect(await readState(bl, protocol, { channel_id: "nobody muted here" }, gateway)).toEqual(
      empty("nobody muted here"),
    );
    // Project B reads its own channel of that name, not A's.
    const b = await readState(bl, protocol, { channel_id: w.channel }, otherGateway);
    expect(b).toMatchObject({ ok: true, state: { participants: [{ uid: "b-only", mute: true, updated_by: "b" }] } });
  });

  test("refusals: no scope for a channel id, another project's or an unknown passphrase, no token", async () => {
    const w = bl.world;
    const noScope = await readState(bl, protocol, { channel_id: w.channel }, host);
    expect(noScope).toEqual({ ok: false, code: 403, message: expect.stringContaining("pstn.gateway") });
    const otherScope = await scopedToken(bl, w.project, "other-scope", ["pstn.reader", "openid"]);
    expect(await readState(bl, protocol, { channel_id: w.channel }, otherScope)).toEqual(noScope);

    const foreign = await readState(bl, protocol, { passphrase: w.otherHostPassphrase }, gateway);
    const unknown = await readState(bl, protocol, { passphrase: "no such passphrase" }, host);
    expect(foreign).toEqual({ ok: false, code: 403, message: expect.stringMatching(/passphrase/) });
    expect(unknown).toEqual(foreign);

    expect(await readState(bl, protocol, { channel_id: w.channel }, null)).toMatchObject({ ok: false, code: 401 });
  });

  test("bad requests are 611: no channel named, an empty or malformed channel id, an empty passphrase", async () => {
    for (const body of [
      {},
      { channel_id: "" },
      { channel_id: "a{b" },
      { channel_id: "a}b" },
      { channel_id: "a\u0001b" },
      { channel_id: "c".repeat(256) },
      { passphrase: "" },
      { passphrase: "p".repeat(257) },
    ]) {
      const answer = await readState(bl, protocol, body, gateway);
      expect(answer, JSON.stringify(body)).toMatchObject({ ok: false, code: 611 });
    }
  });
});

describe("JSON only", () => {
  test("both passphrase and channel_id is 611, and changes nothing", async () => {
    const res = await postJson(
      bl,
      STATE_ROUTE,
      { passphrase: bl.world.hostPassphrase, channel_id: bl.world.channel },
      {
        token: gateway,
      },
    );
    expect(res.status).toBe(400);
    expect(JSON.parse(res.text)).toMatchObject({ error: { code: 611 } });
  });

  test("an attendee passphrase reads but does not mute", async () => {
    const w = bl.world;
    const before = await expectedState();
    const mute = await postJson(bl, ROUTES.mute, muteBody(bl, { passphrase: w.attendeePassphrase, uid: "pstn-1" }), {
      token: host,
    });
    expect(mute.status).toBe(403);
    const answer = await readState(bl, "json", { passphrase: w.attendeePassphrase }, host);
    expect(answer.ok && instants(answer.state)).toEqual(instants(before));
  });

  test("after a run of mutes the snapshot is as of the stream's newest entry, and states match the hash", async () => {
    const uids = ["x-a", "x-b", "x-c", "x-d"];
    const muting = Array.from({ length: 24 }, (_, i) =>
      postJson(bl, ROUTES.mute, muteBody(bl, { uid: uids[i % uids.length], mute: i % 3 === 0 }), { token: host }),
    );
    for (const res of await Promise.all(muting)) expect(res.status).toBe(200);
    const [newest] = await redis.xrevrange(eventsKey(bl), "+", "-", "COUNT", 1);
    const answer = await readState(bl, "json", { channel_id: bl.world.channel }, gateway);
    expect(answer.ok).toBe(true);
    if (!answer.ok) return;
    expect(answer.state["as_of_event_id"]).toBe(newest?.[0]);
    const hash = await redis.hgetall(muteKey(bl));
    const states = (answer.state["participants"] as JsonObject[]).map((p) => [p["uid"], p["mute"] ? "1" : "0"]);
    expect(Object.fromEntries(states)).toEqual(hash);
    expect(instants(answer.state)).toEqual(instants(await expectedState()));
  });
});
