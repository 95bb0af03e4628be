/**
 * A reconnect storm of watchers is served, not dropped. One boardline
 * process (dist/src/main.js) on a redis-server of its own; 2 000 channels of
 * four projects, each channel with one mute event already. In one burst, every channel is watched twice —
 * once by WatchPstnEvents over gRPC (20 HTTP/2 connections of 100 streams) and
 * once over server-sent events (a HTTP/1.1 connection each) — resuming from
 * before that event, as clients reconnecting with their cursors do; so each
 * watch's first event is the one already there, and it comes as soon as the
 * watch is established (gRPC sends its headers with the first message). Each
 * project's 1 000 watches fit its default share of the instance (a quarter of
 * MAX_WATCHES: 2 500), as the gateways of several projects reconnecting do.
 *
 * Asserted: every watch opens (no UNAVAILABLE / 503, no refusal), gets its
 * first event within 10 s of the burst and stays open; one mute per channel
 * through the JSON route then reaches both watches of that channel. And with
 * MAX_WATCHES below a burst, exactly the excess is refused with 429 /
 * RESOURCE_EXHAUSTED and a Retry-After, while every watch under the limit stays
 * open and gets its mute.
 */
import http from "node:http";
import http2 from "node:http2";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, test } from "vitest";
import { mintToken } from "../../src/auth/jwt.js";
import { silentLogger } from "../../src/log.js";
import { PSTN_GATEWAY_SCOPE } from "../../src/services/ports.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis/store.js";
import { type MainProcess, startMainProcess } from "../harness/main-process.js";
import { type RedisServerHandle, startRedisServer } from "../harness/redis-server.js";
import { uniquePrefix } from "../harness/redis-url.js";
import { sleep } from "../harness/sleep.js";
import { ROUTES } from "../harness/routes.js";
import { grpcWatch, type StormWatch, sseWatch } from "./watch-storm-clients.js";

const SECRET = "watch-storm-secret-0123456789abcdef";
/** The projects the channels belong to, in turn; each has its gateway. */
const PROJECTS = ["p0", "p1", "p2", "p3"];
const CHANNELS = 2_000;
const SESSIONS = 20;
/** Every watch must be live this soon after the burst (the bound). */
const LIVE_WITHIN_MS = 10_000;
/** Watches resume from before each channel's first event. */
const FROM_START = "0-1";

const prefix = uniquePrefix("storm");
const channels = Array.from({ length: CHANNELS }, (_, i) => ({
  project: PROJECTS[i % PROJECTS.length] as string,
  channel: `storm-${i}`,
  hostPassphrase: `host ${i} ${randomBytes(6).toString("hex")}`,
}));

let redis: RedisServerHandle;
let store: RedisStore;

beforeAll(async () => {
  redis = await startRedisServer();
  store = createRedisStore({ mode: "single", url: redis.url }, { keyPrefix: prefix, logger: silentLogger() });
  await store.waitUntilReady();
  const t0 = performance.now();
  await inBatches(channels, 100, async (c) => {
    // The directory's own create (what CreateChannel does): no SCAN per channel, unlike `createChannel`.
    const created = await store.channels.create({
      project: c.project,
      channel: c.channel,
      passphrases: [{ role: "host", passphrase: c.hostPassphrase }],
      createdBy: "seed",
      createdAt: Date.now(),
      expireAt: undefined,
    });
    expect(created.kind).toBe("created");
    await store.setMute({
      project: c.project,
      channel: c.channel,
      uid: "before",
      mute: true,
      by: "seed",
      at: Date.now(),
    });
  });
  console.log(`seeded ${CHANNELS} channels in ${Math.round(performance.now() - t0)} ms`);
}, 60_000);
afterAll(async () => {
  await store?.close();
  await redis?.stop();
});

async function inBatches<T>(items: readonly T[], size: number, f: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(f));
}

const token = (project: string, subject: string, scopes: string[] = []) =>
  mintToken({ secret: new TextEncoder().encode(SECRET), project, subject, ttlSeconds: 600, scopes });

/** Each project's token with `scopes`. */
async function tokens(subject: string, scopes: string[] = []): Promise<Map<string, string>> {
  return new Map(await Promise.all(PROJECTS.map(async (p) => [p, await token(p, subject, scopes)] as const)));
}

async function startInstance(env: Record<string, string> = {}): Promise<MainProcess> {
  return startMainProcess({
    REDIS_URL: redis.url,
    REDIS_KEY_PREFIX: prefix,
    JWT_SECRET: SECRET,
    CONVERSION_API_BASE: "http://127.0.0.1:9",
    ...env,
  });
}

async function connectSessions(url: string): Promise<http2.ClientHttp2Session[]> {
  return Promise.all(
    Array.from({ length: SESSIONS }, async () => {
      const session = http2.connect(url);
      session.on("error", () => {}); // seen by its streams
      await new Promise<void>((resolve, reject) => {
        session.once("connect", () => resolve());
        session.once("error", reject);
      });
      return session;
    }),
  );
}

/**
 * Opens a gRPC and an SSE watch of each of `count` channels, all at once, each with its project's gateway
 * token; answers them in burst order.
 */
function burst(
  bl: MainProcess,
  sessions: http2.ClientHttp2Session[],
  gateways: Map<string, string>,
  count: number,
): StormWatch[] {
  const watches: StormWatch[] = [];
  for (let i = 0; i < count; i++) {
    const { channel, project } = channels[i] as { channel: string; project: string };
    const gateway = gateways.get(project) as string;
    watches.push(grpcWatch(sessions[i % sessions.length] as http2.ClientHttp2Session, gateway, channel, FROM_START));
    watches.push(sseWatch(bl.url, gateway, channel, FROM_START));
  }
  return watches;
}

/** Resolves once `done` holds, or after `ms`. */
async function until(done: () => boolean, ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  while (!done() && performance.now() < deadline) await sleep(50);
}

/** Mutes `uid` in each channel through the JSON route, 16 at a time over keep-alive connections. */
async function muteEach(bl: MainProcess, count: number, uid: string): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  const jwts = await tokens("storm-muter");
  try {
    await inBatches(channels.slice(0, count), 16, async (c) => {
      const status = await new Promise<number>((resolve, reject) => {
        const req = http.request(`${bl.url}${ROUTES.mute}`, {
          method: "POST",
          agent,
          headers: { authorization: `Bearer ${jwts.get(c.project)}`, "content-type": "application/json" },
        });
        req.on("response", (res) => {
          res.resume();
          res.on("end", () => resolve(res.statusCode ?? 0));
        });
        req.on("error", reject);
        req.end(JSON.stringify({ uid, passphrase: c.hostPassphrase, mute: true }));
      });
      expect(status).toBe(200);
    });
  } finally {
    agent.destroy();
  }
}

/** What went wrong with the watches, grouped, for a readable failure. */
function tally(watches: readonly StormWatch[], what: (w: StormWatch) => string | undefined): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const w of watches) {
    const key = what(w);
    if (key !== undefined) counts[`${w.protocol} ${key}`] = (counts[`${w.protocol} ${key}`] ?? 0) + 1;
  }
  return counts;
}

const refusal = (w: StormWatch) =>
  w.answer === undefined
    ? "no answer"
    : w.answer.open
      ? undefined
      : `refused ${w.answer.code ?? "?"} (grpc ${w.answer.grpcStatus ?? "-"}): ${w.answer.message}`;

function percentile(xs: number[], q: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? Number.NaN);
}

test("4 000 watches of four projects opened in one burst all open, stay open and get their channel's mute", async () => {
  const bl = await startInstance();
  const sessions = await connectSessions(bl.url);
  const watches: StormWatch[] = [];
  try {
    const gateways = await tokens("storm-gateway", [PSTN_GATEWAY_SCOPE]);
    const t0 = performance.now();
    watches.push(...burst(bl, sessions, gateways, CHANNELS));
    // A watch is live once its first event (the one before the burst) came; a refusal ends the wait too.
    await until(() => watches.every((w) => w.answer?.open === false || w.uids.length > 0), 2 * LIVE_WITHIN_MS);
    const live = watches.flatMap((w) => (w.firstEventAt === undefined ? [] : [w.firstEventAt - t0]));
    console.log(
      `storm of ${watches.length}: live ${live.length}, p50 ${percentile(live, 0.5)} ms, p99 ${percentile(live, 0.99)} ms`,
    );
    const notLive = tally(watches, (w) => refusal(w) ?? (w.uids.length === 0 ? "no first event" : undefined));
    expect(notLive).toEqual({});
    expect(Math.max(...live)).toBeLessThan(LIVE_WITHIN_MS);
    await muteEach(bl, CHANNELS, "after");
    await until(() => watches.every((w) => w.uids.length >= 2 || w.ended !== undefined), 20_000);
    expect(tally(watches, (w) => w.ended)).toEqual({});
    expect(tally(watches, (w) => (w.uids.join() === "before,after" ? undefined : w.uids.join()))).toEqual({});
  } finally {
    for (const w of watches) w.close();
    for (const s of sessions) s.close();
    bl.proc.kill("SIGTERM");
  }
}, 90_000);

test("with MAX_WATCHES below the burst, exactly the excess is refused with Retry-After; the rest stay open", async () => {
  const count = 1_000;
  const max = 1_500;
  // No share below the instance's bound: this is about MAX_WATCHES.
  const bl = await startInstance({ MAX_WATCHES: String(max), MAX_WATCHES_PER_PROJECT: String(max) });
  const sessions = await connectSessions(bl.url);
  const watches: StormWatch[] = [];
  try {
    const gateways = await tokens("storm-gateway", [PSTN_GATEWAY_SCOPE]);
    watches.push(...burst(bl, sessions, gateways, count));
    await until(() => watches.every((w) => w.answer?.open === false || w.uids.length > 0), 2 * LIVE_WITHIN_MS);
    const open = watches.filter((w) => w.answer?.open === true);
    const refused = watches.filter((w) => w.answer?.open === false);
    console.log("refused:", tally(refused, refusal));
    expect(open.length).toBe(max);
    expect(refused.length).toBe(2 * count - max);
    const metrics = await (await fetch(`${bl.metricsUrl}/metrics`)).text();
    expect(metrics).toMatch(new RegExp(`^boardline_watch_refusals_total ${2 * count - max}$`, "m"));
    expect(bl.output()).toMatch(/"level":40.*"msg":"watches refused: MAX_WATCHES are open/);
    for (const w of refused) {
      expect(w.answer?.code).toBe(429);
      if (w.protocol === "grpc") expect(w.answer?.grpcStatus).toBe(8);
      expect([1, 2, 3]).toContain(w.answer?.retryAfterSeconds); // jittered
    }
    // The refused watches' channels still have a watch of the other protocol, mostly: mute them all.
    await muteEach(bl, count, "limit");
    const gotIt = (w: StormWatch) => w.uids.at(-1) === "limit";
    await until(() => open.every((w) => gotIt(w) || w.ended !== undefined), 20_000);
    expect(tally(open, (w) => w.ended)).toEqual({});
    // Each watch has its channel from the start: "before", whatever the other test muted, then this mute once.
    const wrong = (w: StormWatch) => w.uids[0] !== "before" || w.uids.indexOf("limit") !== w.uids.length - 1;
    expect(tally(open, (w) => (wrong(w) ? w.uids.join() : undefined))).toEqual({});
  } finally {
    for (const w of watches) w.close();
    for (const s of sessions) s.close();
    bl.proc.kill("SIGTERM");
  }
}, 90_000);
