/**
 * The guessing limit under concurrency: a caller that sends many wrong
 * passphrases at once gets at most GUESS_LIMIT of them judged (403 or 404,
 * or PERMISSION_DENIED) in the window; the rest are refused unjudged with
 * 429 / RESOURCE_EXHAUSTED. Over one HTTP/2 connection (grpc-js), over
 * HTTP/1.1 (a connection per request), and on three instances, each with
 * its own Redis connections, sharing one Redis. See docs/security.md,
 * "Passphrases and the guessing limit".
 *
 * And the other side: a caller with the right passphrase is never capped. Once
 * one of its calls was judged right, its calls with that passphrase take no
 * guess, so 40 mutes at once all succeed; a first burst before that is told
 * to come back in a second, not at the end of the window.
 */
import { toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { MuteRequestSchema } from "../../gen/channel/v1/pstn_pb.js";
import { MissLimitGuard } from "../../src/services/passphrase-guard.js";
import type { AdminStore } from "../../src/services/ports.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { postJson } from "../harness/http.js";
import { convertBody, muteBody } from "../harness/request-bodies.js";
import { ROUTES, RPC_PATHS } from "../harness/routes.js";
import { STATE_ROUTE } from "../e2e/helpers/pstn-state.js";
import { muteRequest } from "../e2e/helpers/rpc.js";

const LIMIT = 10;
const BURST = 200;
/** As in production: GUESS_PROVEN_SECONDS at its default. */
const guard = (store: AdminStore) =>
  new MissLimitGuard(store, { attempts: LIMIT, windowSeconds: 60, provenSeconds: 600 });

let bl: Boardline;
/** Two more instances on the same Redis and prefix, each with a store (and connections) of its own. */
let others: Boardline[];

beforeAll(async () => {
  bl = await startBoardline({ guard });
  const same = { guard, prefix: bl.prefix, secret: bl.secret, seed: false } as const;
  others = [await startBoardline(same), await startBoardline(same)];
});
afterAll(async () => {
  for (const o of others) await o.close();
  await bl.close();
});

/** How many of `statuses` were judged (a refusal that looked the passphrase up) and how many refused unjudged. */
function tally(statuses: readonly number[], judged: readonly number[], limited: number) {
  return {
    judged: statuses.filter((s) => judged.includes(s)).length,
    limited: statuses.filter((s) => s === limited).length,
    other: statuses.filter((s) => !judged.includes(s) && s !== limited),
  };
}

/** A fresh caller's token (its own guessing budget). */
const caller = (subject: string) => bl.token(bl.world.project, `${subject}-${Math.random().toString(36).slice(2)}`);

describe("a burst of wrong passphrases from one caller", () => {
  test(`gRPC over one HTTP/2 connection: ${LIMIT} of ${BURST} judged, no more`, async () => {
    const client = new grpc.Client(new URL(bl.url).host, grpc.credentials.createInsecure());
    try {
      const metadata = new grpc.Metadata();
      metadata.set("authorization", `Bearer ${await caller("grpc")}`);
      const one = (i: number) =>
        new Promise<number>((resolve) => {
          client.makeUnaryRequest(
            RPC_PATHS.mute,
            (m: ReturnType<typeof muteRequest>) => Buffer.from(toBinary(MuteRequestSchema, m)),
            (b: Buffer) => b,
            muteRequest(muteBody(bl, { passphrase: `wrong guess number ${i}` })),
            metadata,
            { deadline: Date.now() + 20_000 },
            (error) => resolve(error?.code ?? grpc.status.OK),
          );
        });
      const codes = await Promise.all(Array.from({ length: BURST }, (_, i) => one(i)));
      const t = tally(codes, [grpc.status.PERMISSION_DENIED], grpc.status.RESOURCE_EXHAUSTED);
      expect(t.other).toEqual([]);
      expect(t.judged).toBe(LIMIT);
      expect(t.judged + t.limited).toBe(BURST);
    } finally {
      client.close();
    }
  });

  test(`JSON over HTTP/1.1: ${LIMIT} of ${BURST} judged, no more`, async () => {
    const token = await caller("h1");
    const body = (i: number) => muteBody(bl, { passphrase: `wrong guess number ${i}` });
    const answers = await Promise.all(
      Array.from({ length: BURST }, (_, i) => postJson(bl, ROUTES.mute, body(i), { token })),
    );
    const t = tally(
      answers.map((a) => a.status),
      [403],
      429,
    );
    expect(t.other).toEqual([]);
    expect(t.judged).toBe(LIMIT);
    for (const a of answers.filter((a) => a.status === 429)) {
      expect(Number(a.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    }
  });

  test(`three instances on one Redis, mutes, state reads and conversions mixed: ${LIMIT} of ${BURST} judged, no more`, async () => {
    const token = await caller("spread");
    const instances = [bl, ...others];
    const one = (i: number) => {
      const on = instances[i % 3] as Boardline;
      const passphrase = `wrong guess number ${i}`;
      const kind = Math.floor(i / 3) % 3;
      if (kind === 0) return postJson(on, ROUTES.mute, muteBody(bl, { passphrase }), { token });
      if (kind === 1) return postJson(on, STATE_ROUTE, { passphrase }, { token });
      return postJson(on, ROUTES.convert, convertBody(bl, { passphrase }), { token });
    };
    const answers = await Promise.all(Array.from({ length: BURST }, (_, i) => one(i)));
    const t = tally(
      answers.map((a) => a.status),
      [403, 404],
      429,
    );
    expect(t.other).toEqual([]);
    expect(t.judged).toBe(LIMIT);
  });
});

describe("a right passphrase gives its guess back", () => {
  test(`a caller that misses ${LIMIT - 1} times and then hits is not locked out`, async () => {
    const token = await caller("good");
    const mute = (passphrase: string) => postJson(bl, ROUTES.mute, muteBody(bl, { passphrase }), { token });
    for (let i = 0; i < LIMIT - 1; i++) expect((await mute(`typo ${i}`)).status).toBe(403);
    for (let i = 0; i < 3; i++) expect((await mute(bl.world.hostPassphrase)).status).toBe(200);
    // The hits took nothing: one miss is left, and then the lock-out.
    expect((await mute("one more typo")).status).toBe(403);
    expect((await mute("and another")).status).toBe(429);
    // The caller proved it holds the host passphrase: that one still works, and only that one.
    expect((await mute(bl.world.hostPassphrase)).status).toBe(200);
    expect((await mute(bl.world.attendeePassphrase)).status).toBe(429);
  });

  test("a caller locked out by misses before it ever proved a passphrase is refused the right one too", async () => {
    const token = await caller("unproven");
    const mute = (passphrase: string) => postJson(bl, ROUTES.mute, muteBody(bl, { passphrase }), { token });
    for (let i = 0; i < LIMIT; i++) expect((await mute(`typo ${i}`)).status).toBe(403);
    expect((await mute(bl.world.hostPassphrase)).status).toBe(429);
  });
});

describe("a caller with the right passphrase is never capped", () => {
  const MUTES = 40;

  /** `n` mutes with the host passphrase at once over one HTTP/2 connection (grpc-js); their status codes. */
  async function mutesAtOnce(token: string, n: number): Promise<number[]> {
    const client = new grpc.Client(new URL(bl.url).host, grpc.credentials.createInsecure());
    try {
      const metadata = new grpc.Metadata();
      metadata.set("authorization", `Bearer ${token}`);
      const one = (i: number) =>
        new Promise<number>((resolve) => {
          client.makeUnaryRequest(
            RPC_PATHS.mute,
            (m: ReturnType<typeof muteRequest>) => Buffer.from(toBinary(MuteRequestSchema, m)),
            (b: Buffer) => b,
            muteRequest(muteBody(bl, { uid: `dial-in-${i}` })),
            metadata,
            { deadline: Date.now() + 20_000 },
            (error) => resolve(error?.code ?? grpc.status.OK),
          );
        });
      return await Promise.all(Array.from({ length: n }, (_, i) => one(i)));
    } finally {
      client.close();
    }
  }

  test(`one right call, then ${MUTES} right mutes at once over one HTTP/2 connection: all ${MUTES} succeed (GUESS_LIMIT ${LIMIT})`, async () => {
    const token = await caller("gateway");
    expect((await postJson(bl, ROUTES.mute, muteBody(bl), { token })).status).toBe(200);
    expect(await mutesAtOnce(token, MUTES)).toEqual(Array(MUTES).fill(grpc.status.OK));
    // And again after the caller used up its guesses on misses: the proven passphrase is not held back.
    for (let i = 0; i < LIMIT; i++) {
      expect((await postJson(bl, ROUTES.mute, muteBody(bl, { passphrase: `typo ${i}` }), { token })).status).toBe(403);
    }
    expect(await mutesAtOnce(token, MUTES)).toEqual(Array(MUTES).fill(grpc.status.OK));
    expect((await postJson(bl, ROUTES.mute, muteBody(bl, { passphrase: "one more" }), { token })).status).toBe(429);
  });

  test(`a cold burst of ${MUTES} right mutes: all succeed, those beyond the limit waiting for the first to be judged`, async () => {
    const token = await caller("cold");
    const first = await Promise.all(
      Array.from({ length: MUTES }, (_, i) => postJson(bl, ROUTES.mute, muteBody(bl, { uid: `c-${i}` }), { token })),
    );
    expect(first.map((a) => a.status)).toEqual(Array(MUTES).fill(200));
  });
});
