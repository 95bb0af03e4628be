/**
 * A reconnect storm of watchers against one instance —
 * WatchPstnEvents opened all at once (a burst) against the same number opened
 * at 1 000 per second (paced), in the same run, for each storm size. Part of
 * `npm run bench`; `npm run bench:reconnect-storm` runs only it. Writes its
 * section of docs/performance.md (not with BENCH_NO_WRITE=1) and prints it.
 *
 * What runs, all on loopback, every process started and stopped here:
 *   - a redis-server of its own (no persistence) and, per cell, a fresh
 *     boardline (dist/src/main.js, the package's V8 flags, NODE_ENV=production,
 *     MAX_WATCHES = MAX_WATCHES_PER_PROJECT = BENCH_STORM_MAX_WATCHES, default
 *     10 000, as the storm is one project's) — a fresh instance,
 *     as the one a storm reconnects to has none of the watches yet — both
 *     pinned to the first allowed CPU when there are two; this process (the
 *     watchers) on the second;
 *   - channels of one project, each with one mute event, written through the
 *     store's own code (dist/); half the watches are gRPC streams over 20
 *     HTTP/2 connections (node:http2), half SSE over HTTP/1.1 (a connection
 *     each), two per channel; each resumes from before the channel's event, so
 *     its first message comes when it is established: "live" is that moment.
 *
 * Per size and mode: time from each watch's request until it is live (p50,
 * p99, max), from the first request until every watch is live, and how many
 * were refused (429 / RESOURCE_EXHAUSTED: MAX_WATCHES) or failed otherwise.
 *
 * Environment: BENCH_STORM_SIZES ("1000 2000 4000": watches per cell, even),
 * BENCH_STORM_RATE (1000 per second, the paced cells), BENCH_STORM_MAX_WATCHES
 * (10000), BENCH_NO_WRITE.
 */
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import http2 from "node:http2";
import os from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { create, toBinary } from "@bufbuild/protobuf";
import { Servers, splitCpus } from "../lib/processes.mjs";
import { createLogger, createRedisStore, mintToken } from "../lib/boardline.mjs";
import { WatchPstnEventsRequestSchema } from "../lib/protos.mjs";
import { writeSection } from "../report/document.mjs";
import { render } from "../report/reconnect-storm.mjs";

const env = process.env;

const SIZES = (env.BENCH_STORM_SIZES ?? "1000 2000 4000").split(/\s+/).filter(Boolean).map(Number);
const RATE = Number(env.BENCH_STORM_RATE ?? 1000);
const MAX_WATCHES = Number(env.BENCH_STORM_MAX_WATCHES ?? 10_000);
if (SIZES.some((n) => !(n >= 2 && n % 2 === 0)) || !(RATE > 0)) throw new Error("sizes must be even, the rate > 0");
const CHANNELS = Math.max(...SIZES) / 2;
const SESSIONS = 20;
/** The longest a cell waits for its watches (bounded: the bench always ends). */
const CELL_LIMIT_MS = 60_000;
const PREFIX = "bs:";
const PROJECT = "bench-storm";
const SECRET = "bench-storm-secret-0123456789abcdef";
const WATCH_RPC = "/channel.v1.PstnService/WatchPstnEvents";
const WATCH_ROUTE = "/v1/channel/pstn/events:watch";

const WORK = mkdtempSync(join(os.tmpdir(), "boardline-bench-storm-"));
const startedAt = new Date();
const loadStart = os.loadavg();
/** Before this process pins itself to one CPU. */
const log = (...args) => console.error(`[bench:reconnect-storm ${new Date().toISOString().slice(11, 19)}]`, ...args);

// --- CPUs: servers on the first allowed one, this process on the second ------------------------
const { serverCpu: SERVER_CPU, loadCpu: LOAD_CPU } = splitCpus();
const servers = new Servers({ work: WORK, cpu: SERVER_CPU });

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
};

// --- the watches ------------------------------------------------------------------------------

/**
 * One watch: when it was asked for, when it went live, how it was refused or ended.
 * @typedef {{ askedAt: number, liveAt: number | undefined, refused: string | undefined,
 *   failed: string | undefined, close: () => void }} StormWatch
 */

/** @returns {StormWatch} */
function watchState() {
  return { askedAt: performance.now(), liveAt: undefined, refused: undefined, failed: undefined, close: () => {} };
}

function grpcWatch(session, token, channel) {
  const w = watchState();
  const stream = session.request({
    ":method": "POST",
    ":path": WATCH_RPC,
    "content-type": "application/grpc",
    te: "trailers",
    authorization: `Bearer ${token}`,
  });
  const message = toBinary(
    WatchPstnEventsRequestSchema,
    create(WatchPstnEventsRequestSchema, { channelIds: [channel], after: "0-1" }),
  );
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  stream.end(frame);
  const status = (headers) => {
    const s = headers["grpc-status"];
    if (s === undefined || w.liveAt !== undefined) return;
    if (s === "8") w.refused ??= "RESOURCE_EXHAUSTED";
    else w.failed ??= `grpc-status ${s}`;
  };
  stream.on("response", status);
  stream.on("trailers", status);
  stream.on("data", () => {
    w.liveAt ??= performance.now();
  });
  stream.on("error", () => {});
  stream.on("close", () => {
    if (w.liveAt === undefined && w.refused === undefined) w.failed ??= "closed";
  });
  w.close = () => stream.close(http2.constants.NGHTTP2_CANCEL);
  return w;
}

function sseWatch(url, token, channel) {
  const w = watchState();
  const req = http.request(`${url}${WATCH_ROUTE}`, {
    method: "POST",
    agent: false,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
  });
  req.on("response", (res) => {
    if (res.statusCode === 429) w.refused = "429";
    else if (res.statusCode !== 200) w.failed = `HTTP ${res.statusCode}`;
    res.on("data", () => {
      if (res.statusCode === 200) w.liveAt ??= performance.now();
    });
    res.on("error", () => {});
  });
  req.on("error", () => {
    if (w.liveAt === undefined && w.refused === undefined) w.failed ??= "request error";
  });
  req.end(JSON.stringify({ channel_ids: [channel], after: "0-1" }));
  w.close = () => req.destroy();
  return w;
}

async function connectSessions(url) {
  return Promise.all(
    Array.from({ length: SESSIONS }, async () => {
      const session = http2.connect(url);
      session.on("error", () => {});
      await new Promise((resolve, reject) => {
        session.once("connect", resolve);
        session.once("error", reject);
      });
      return session;
    }),
  );
}

/** One cell: a fresh boardline, `size` watches opened at once (rate undefined) or at `rate` per second. */
async function cell(redisUrl, token, size, rate) {
  const bl = await servers.startBoardline(`boardline-${size}-${rate ?? "burst"}`, {
    LOG_LEVEL: "warn",
    GUESS_LIMIT: "10",
    REDIS_URL: redisUrl,
    REDIS_KEY_PREFIX: PREFIX,
    JWT_SECRET: SECRET,
    MAX_WATCHES: String(MAX_WATCHES),
    // The storm is one project's gateway: its share is the whole instance.
    MAX_WATCHES_PER_PROJECT: String(MAX_WATCHES),
  });
  const url = bl.url;
  const sessions = await connectSessions(url);
  const watches = [];
  const t0 = performance.now();
  for (let i = 0; i < size / 2; i++) {
    if (rate !== undefined) {
      const due = t0 + ((2 * i) / rate) * 1000;
      if (due > performance.now() + 1) await sleep(due - performance.now());
    }
    const channel = `storm-${i}`;
    watches.push(grpcWatch(sessions[i % SESSIONS], token, channel), sseWatch(url, token, channel));
  }
  const settled = (w) => w.liveAt !== undefined || w.refused !== undefined || w.failed !== undefined;
  const limit = performance.now() + CELL_LIMIT_MS;
  while (!watches.every(settled) && performance.now() < limit) await sleep(20);
  const live = watches.flatMap((w) => (w.liveAt === undefined ? [] : [{ ...w, liveAt: w.liveAt }]));
  const toLive = live.map((w) => w.liveAt - w.askedAt);
  const result = {
    size,
    mode: rate === undefined ? "burst" : `${rate}/s`,
    live: live.length,
    p50: quantile(toLive, 0.5),
    p99: quantile(toLive, 0.99),
    max: Math.max(...toLive),
    allLiveMs: live.length === size ? Math.max(...live.map((w) => w.liveAt)) - t0 : Number.NaN,
    refused: watches.filter((w) => w.refused !== undefined).length,
    failed: watches.filter((w) => w.failed !== undefined || !settled(w)).length,
  };
  for (const w of watches) w.close();
  for (const s of sessions) s.close();
  await bl.stop();
  log(JSON.stringify(result));
  return result;
}

async function seed(redisUrl) {
  const store = createRedisStore(
    { mode: "single", url: redisUrl },
    { keyPrefix: PREFIX, logger: createLogger("warn") },
  );
  await store.waitUntilReady();
  for (let i = 0; i < CHANNELS; i += 100) {
    await Promise.all(
      Array.from({ length: Math.min(100, CHANNELS - i) }, async (_, k) => {
        const channel = `storm-${i + k}`;
        const passphrase = `storm host ${i + k}`;
        await store.channels.create({
          project: PROJECT,
          channel,
          passphrases: [{ role: "host", passphrase }],
          createdBy: "bench",
          createdAt: Date.now(),
          expireAt: undefined,
        });
        await store.setMute({ project: PROJECT, channel, uid: "before", mute: true, by: "bench", at: Date.now() });
      }),
    );
  }
  await store.close();
}

async function main() {
  const redis = await servers.startRedis();
  const redisUrl = redis.url;
  log(`seeding ${CHANNELS} channels`);
  await seed(redisUrl);
  const token = await mintToken({
    secret: new TextEncoder().encode(SECRET),
    project: PROJECT,
    subject: "bench-gateway",
    ttlSeconds: 3600,
    scopes: ["pstn.gateway"],
  });
  const results = [];
  for (const size of SIZES) {
    results.push(await cell(redisUrl, token, size, undefined));
    results.push(await cell(redisUrl, token, size, RATE));
  }
  await redis.stop();
  return results;
}

try {
  const results = await main();
  const pinning = SERVER_CPU
    ? `boardline and Redis on CPU ${SERVER_CPU}, the watchers on CPU ${LOAD_CPU}`
    : "no pinning (one CPU)";
  writeSection("reconnect-storm", render({ results, startedAt, loadStart, pinning, maxWatches: MAX_WATCHES }), log);
} finally {
  await servers.stopAll();
  rmSync(WORK, { recursive: true, force: true });
}
