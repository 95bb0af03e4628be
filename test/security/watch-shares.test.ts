/**
 * One tenant cannot starve another of watches: real boardline processes
 * (dist/src/main.js) on the test Redis, real clients on loopback. With
 * MAX_WATCHES 60 and its default share (a quarter: 15 per project), project
 * A's gateway opens 60 WatchPstnEvents at once over one HTTP/2 connection:
 * exactly its share opens, the rest are refused with 429 /
 * RESOURCE_EXHAUSTED, the project's-share detail and a jittered Retry-After
 * (over gRPC and, in the documented JSON error shape, over SSE), while
 * project B still opens its watches on the same instance. The share counts
 * per instance: a second instance still takes A's watches. A watch A ends
 * gives its place back to A.
 */
import http2 from "node:http2";
import { afterAll, beforeAll, expect, test } from "vitest";
import { mintToken } from "../../src/auth/jwt.js";
import { silentLogger } from "../../src/log.js";
import { PSTN_GATEWAY_SCOPE } from "../../src/services/ports.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis/store.js";
import { expectError } from "../e2e/helpers/contract.js";
import { WATCH_ROUTE } from "../e2e/helpers/pstn-watch.js";
import { grpcWatch, sseWatch, type StormWatch } from "../faults/watch-storm-clients.js";
import { eventually } from "../harness/eventually.js";
import { type MainProcess, startMainProcess } from "../harness/main-process.js";
import { deleteKeysWithPrefix, redisUrl, uniquePrefix } from "../harness/redis-url.js";

const SECRET = "watch-shares-secret-0123456789abcdef";
const MAX_WATCHES = 60;
/** The default share: a quarter of MAX_WATCHES. */
const SHARE = 15;
const CHANNEL = "room";
/** Watches resume from before the channel's one event, so an open watch shows itself with that event. */
const FROM_START = "0-1";
const prefix = uniquePrefix("shares");

let store: RedisStore;
let one: MainProcess;
let two: MainProcess;
const sessions: http2.ClientHttp2Session[] = [];
const watches: StormWatch[] = [];

const gateway = (project: string) =>
  mintToken({
    secret: new TextEncoder().encode(SECRET),
    project,
    subject: `${project}-gateway`,
    ttlSeconds: 600,
    scopes: [PSTN_GATEWAY_SCOPE],
  });

const start = () =>
  startMainProcess({
    REDIS_URL: redisUrl(),
    REDIS_KEY_PREFIX: prefix,
    JWT_SECRET: SECRET,
    CONVERSION_API_BASE: "http://127.0.0.1:9",
    MAX_WATCHES: String(MAX_WATCHES),
  });

async function connect(url: string): Promise<http2.ClientHttp2Session> {
  const session = http2.connect(url);
  session.on("error", () => {}); // seen by its streams
  await new Promise<void>((resolve, reject) => {
    session.once("connect", () => resolve());
    session.once("error", reject);
  });
  sessions.push(session);
  return session;
}

/** Resolves once every watch is answered: open with its first event, or refused. */
async function answered(ws: readonly StormWatch[]): Promise<void> {
  await eventually(
    () => ws.every((w) => w.answer?.open === false || w.uids.length > 0),
    15_000,
    "every watch to be answered",
  );
}

beforeAll(async () => {
  store = createRedisStore({ mode: "single", url: redisUrl() }, { keyPrefix: prefix, logger: silentLogger() });
  await store.waitUntilReady();
  for (const project of ["a", "b"]) {
    const created = await store.channels.create({
      project,
      channel: CHANNEL,
      passphrases: [{ role: "host", passphrase: `host of ${project} 0123456789` }],
      createdBy: "seed",
      createdAt: Date.now(),
      expireAt: undefined,
    });
    expect(created.kind).toBe("created");
    await store.setMute({ project, channel: CHANNEL, uid: "before", mute: true, by: "seed", at: Date.now() });
  }
  [one, two] = await Promise.all([start(), start()]);
}, 60_000);

afterAll(async () => {
  for (const w of watches) w.close();
  for (const s of sessions) s.close();
  one?.proc.kill("SIGTERM");
  two?.proc.kill("SIGTERM");
  await store?.close();
  await deleteKeysWithPrefix(redisUrl(), prefix);
});

test("project A's burst past its share is refused with 429 and Retry-After; project B still opens its watches", async () => {
  const a = await gateway("a");
  const b = await gateway("b");
  const session = await connect(one.url);
  const burst = Array.from({ length: MAX_WATCHES }, () => grpcWatch(session, a, CHANNEL, FROM_START));
  watches.push(...burst);
  await answered(burst);
  const open = burst.filter((w) => w.answer?.open === true);
  const refused = burst.filter((w) => w.answer?.open === false);
  expect([open.length, refused.length]).toEqual([SHARE, MAX_WATCHES - SHARE]);
  for (const w of refused) {
    expect(w.answer).toMatchObject({ code: 429, grpcStatus: 8 }); // RESOURCE_EXHAUSTED
    expect(w.answer?.message).toMatch(/this project has its share .*MAX_WATCHES_PER_PROJECT/);
    expect([1, 2, 3]).toContain(w.answer?.retryAfterSeconds); // jittered
  }

  // Over SSE too, in the documented JSON error shape, with Retry-After.
  const res = await fetch(`${one.url}${WATCH_ROUTE}`, {
    method: "POST",
    headers: { authorization: `Bearer ${a}`, "content-type": "application/json" },
    body: JSON.stringify({ channel_ids: [CHANNEL], after: FROM_START }),
  });
  expectError({ status: res.status, headers: res.headers, text: await res.text() }, 429, 429, /share/);
  expect(["1", "2", "3"]).toContain(res.headers.get("retry-after"));

  // Project B, on the same instance, over gRPC on a connection of its own and over SSE.
  const other = [grpcWatch(await connect(one.url), b, CHANNEL, FROM_START), sseWatch(one.url, b, CHANNEL, FROM_START)];
  watches.push(...other);
  await answered(other);
  expect(other.map((w) => [w.answer?.open, w.uids])).toEqual([
    [true, ["before"]],
    [true, ["before"]],
  ]);
  expect(one.output()).toMatch(
    /"level":40.*"project":"a".*"msg":"watches refused: a project has MAX_WATCHES_PER_PROJECT open/,
  );

  // The share counts per instance: another instance takes A's watches.
  const elsewhere = grpcWatch(await connect(two.url), a, CHANNEL, FROM_START);
  watches.push(elsewhere);
  await answered([elsewhere]);
  expect(elsewhere.answer?.open).toBe(true);

  // A watch A ends gives its place back to A.
  open[0]?.close();
  await eventually(
    async () => {
      const again = grpcWatch(session, a, CHANNEL, FROM_START);
      watches.push(again);
      await answered([again]);
      return again.answer?.open === true;
    },
    5_000,
    "A's place to be free again",
  );
}, 60_000);
