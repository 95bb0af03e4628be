/**
 * A rolling restart behind a real load balancer drops no call: three boardline
 * processes on one redis-server behind Debian's haproxy (test/harness/haproxy.ts:
 * HTTP/1.1 and h2c on one frontend, HTTP/2 to the instances, `/readyz` health
 * checks). While 8 JSON mute clients (HTTP/1.1 keep-alive), 4 gRPC mute clients
 * (@grpc/grpc-js) and 50 telephone-gateway watchers (WatchPstnEvents over gRPC
 * and SSE, resuming with their cursors) talk to haproxy only, each instance in
 * turn gets SIGTERM, exits 0, and is started again on its port; the next one
 * goes once haproxy has it UP again.
 *
 * Expected, and asserted: every mute answered 200 in the documented shape (no
 * connection error, reset or other answer); every acknowledged mute in the
 * channel's mute hash and on its event stream; every watcher, its events
 * deduplicated by id, has exactly each watched channel's stream, first
 * deliveries in order, and every stream end it saw was the documented one of a
 * draining instance; haproxy took each instance out before its
 * SHUTDOWN_DELAY_MS was over, and never had to retry or redispatch a request.
 * The figures are printed.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, test } from "vitest";
import { mintToken } from "../../src/auth/jwt.js";
import { silentLogger } from "../../src/log.js";
import { PSTN_GATEWAY_SCOPE } from "../../src/services/ports.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis/store.js";
import { eventually } from "../harness/eventually.js";
import { type HaproxyHandle, startHaproxy } from "../harness/haproxy.js";
import { type LoadChannel, missingWrites } from "../harness/instance-load.js";
import { type Instance, noneAlive, startInstances } from "../harness/instances.js";
import { type RedisServerHandle, startRedisServer } from "../harness/redis-server.js";
import { uniquePrefix } from "../harness/redis-url.js";
import { sleep } from "../harness/sleep.js";
import { GatewayWatcher, GrpcMuter, JsonMuter, type Muter } from "./rolling-restart-clients.js";

const SECRET = "rolling-restart-secret-0123456789abcdef";
const PROJECT = "p";
/** haproxy checks every 300 ms and takes a server out after 2 failures: 600 ms, + one interval = 900 ms. */
const CHECK = { interMs: 300, fall: 2, rise: 2 };
/** Covers the checks above with room for a slow, shared machine (the whole suite runs beside it). */
const SHUTDOWN_DELAY_MS = 3_000;
const CHANNELS = 10;
const WATCHERS = 50;
/** Between a mute client's calls: < 20 mutes/s each, < 240/s in all (2 shared cores run everything). */
const PAUSE_MS = 50;

const prefix = uniquePrefix("rolling");
const channels: LoadChannel[] = Array.from({ length: CHANNELS }, (_, i) => ({
  channel: `room-${i}`,
  hostPassphrase: `host ${i} ${randomBytes(6).toString("hex")}`,
}));

let redis: RedisServerHandle;
let store: RedisStore;
let raw: Redis;
let instances: Instance[] = [];
let lb: HaproxyHandle;

beforeAll(async () => {
  redis = await startRedisServer();
  store = createRedisStore({ mode: "single", url: redis.url }, { keyPrefix: prefix, logger: silentLogger() });
  await store.waitUntilReady();
  for (const c of channels) await store.createChannel({ project: PROJECT, ...c });
  raw = new Redis(redis.url);
  instances = await startInstances(3, {
    REDIS_URL: redis.url,
    REDIS_KEY_PREFIX: prefix,
    JWT_SECRET: SECRET,
    // No conversion is made here; production mode wants the setting.
    CONVERSION_API_BASE: "http://127.0.0.1:9",
    SHUTDOWN_DELAY_MS: String(SHUTDOWN_DELAY_MS),
    SHUTDOWN_GRACE_MS: "5000",
  });
  lb = await startHaproxy({ ports: instances.map((i) => i.port), ...CHECK });
}, 60_000);
afterAll(async () => {
  await lb?.stop();
  for (const i of instances) i.kill();
  raw?.disconnect();
  await store?.close();
  await redis?.stop();
});

const token = (subject: string, scopes: string[] = []) =>
  mintToken({ secret: new TextEncoder().encode(SECRET), project: PROJECT, subject, ttlSeconds: 600, scopes });

/** Watcher w: gRPC when even, SSE when odd; one channel, or (two in three) three channels. */
function watchedChannels(w: number): string[] {
  const picks = w % 3 === 0 ? [w] : [w, w + 3, w + 6];
  return picks.map((i) => (channels[i % CHANNELS] as LoadChannel).channel);
}

interface Restart {
  readonly index: number;
  /** From the SIGTERM: haproxy had it DOWN, the process had exited, ready again, UP again in haproxy. */
  readonly downMs: number;
  readonly exitMs: number;
  readonly readyMs: number;
  readonly upMs: number;
  readonly code: number | null;
}

async function restart(instance: Instance): Promise<Restart> {
  const t0 = Date.now();
  let downMs = -1;
  const down = lb.waitFor(instance.index, "DOWN", 10_000).then(() => {
    downMs = Date.now() - t0;
  });
  const code = await instance.stop();
  const exitMs = Date.now() - t0;
  await down;
  await instance.restart();
  const readyMs = Date.now() - t0;
  await lb.waitFor(instance.index, "UP", 10_000);
  return { index: instance.index, downMs, exitMs, readyMs, upMs: Date.now() - t0, code };
}

/** "p50 / p99 / max" of durations in ms. */
function percentiles(ms: number[]): string {
  const sorted = [...ms].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return `${at(0.5)} / ${at(0.99)} / ${sorted.at(-1) ?? 0}`;
}

/** The ids on a channel's event stream (all of it: the channels are new). */
async function streamIds(channel: string): Promise<string[]> {
  const entries = await raw.xrange(`${prefix}chan:{${PROJECT}/${channel}}:pstn-events`, "-", "+");
  return entries.map(([id]) => id);
}

test("a rolling restart of three instances behind haproxy drops no call, loses no write, and every watcher resumes without a gap", async () => {
  const began = Date.now();
  const muteToken = await token("muter");
  const gateway = await token("gateway", [PSTN_GATEWAY_SCOPE]);
  const muters: Muter[] = [
    ...Array.from({ length: 8 }, (_, k) => new JsonMuter(`json${k}`, channels, PAUSE_MS, lb.url, muteToken)),
    ...Array.from({ length: 4 }, (_, k) => new GrpcMuter(`grpc${k}`, channels, PAUSE_MS, lb.url, muteToken)),
  ];
  const watchers = Array.from(
    { length: WATCHERS },
    (_, w) => new GatewayWatcher(`w${w}`, w % 2 === 0 ? "grpc" : "sse", watchedChannels(w), lb.url, gateway),
  );
  for (const w of watchers) w.start();
  for (const m of muters) m.start();

  await sleep(1_500);
  const restarts: Restart[] = [];
  for (const instance of instances) restarts.push(await restart(instance));
  await sleep(1_000);
  for (const m of muters) await m.stop();

  // Every watcher catches up with the streams (what is still in flight arrives within moments).
  const want = new Map<string, Set<string>>();
  for (const c of channels) want.set(c.channel, new Set(await streamIds(c.channel)));
  const complete = (w: GatewayWatcher) =>
    w.channels.every((c) => {
      const got = new Set(w.got.get(c));
      return [...(want.get(c) ?? [])].every((id) => got.has(id));
    });
  await eventually(() => watchers.every(complete), 10_000, "every watcher to have every event").catch(() => {});
  for (const w of watchers) await w.stop();
  const stats = await lb.stats();

  // The figures.
  const results = muters.flatMap((m) => m.results);
  const problems = results.filter((r) => r.problem !== "");
  const events = [...want.values()].reduce((n, s) => n + s.size, 0);
  const deliveries = watchers.reduce((n, w) => n + [...w.got.values()].reduce((k, ids) => k + ids.length, 0), 0);
  const unique = watchers.reduce((n, w) => n + [...w.got.values()].reduce((k, ids) => k + new Set(ids).size, 0), 0);
  const ends = watchers.flatMap((w) => w.ends);
  const refusedOpens = watchers.flatMap((w) => w.refusedOpens);
  const jsonConnections = muters.filter((m) => m instanceof JsonMuter).map((m) => (m as JsonMuter).connections);
  const missing = await missingWrites(raw, { prefix, project: PROJECT, channels }, results);
  const gaps = watchers.flatMap((w) =>
    w.channels.flatMap((c) => {
      const got = new Set(w.got.get(c));
      const lacking = [...(want.get(c) ?? [])].filter((id) => !got.has(id)).length;
      const extra = [...got].filter((id) => !want.get(c)?.has(id)).length;
      return lacking + extra === 0 ? [] : [`${w.name} on ${c}: ${lacking} missing, ${extra} unknown`];
    }),
  );
  const outOfOrder = watchers.flatMap((w) =>
    w.channels.filter((c) => {
      const first = [...new Set(w.got.get(c))];
      const order = [...(want.get(c) ?? [])].filter((id) => first.includes(id));
      return JSON.stringify(first) !== JSON.stringify(order);
    }),
  );
  console.log(
    [
      `rolling restart behind haproxy: ${((Date.now() - began) / 1000).toFixed(1)} s`,
      `  restarts (ms from SIGTERM: haproxy DOWN / exit / ready / haproxy UP; exit code): ${restarts
        .map((r) => `i${r.index} ${r.downMs}/${r.exitMs}/${r.readyMs}/${r.upMs} (${r.code})`)
        .join(", ")}`,
      `  mutes: ${results.length} (${results.filter((r) => r.kind === "json mute").length} JSON, ${
        results.filter((r) => r.kind === "grpc mute").length
      } gRPC), ${results.filter((r) => r.status === 200 && r.problem === "").length} answered 200 as documented, ${
        problems.length
      } not (${results.filter((r) => r.status === 0).length} with no answer)${
        problems.length > 0
          ? `: ${problems
              .slice(0, 5)
              .map((p) => p.problem)
              .join(" | ")}`
          : ""
      }`,
      `  latency p50 / p99 / max (ms): ${(["json mute", "grpc mute"] as const)
        .map((kind) => `${kind} ${percentiles(results.filter((r) => r.kind === kind).map((r) => r.end - r.start))}`)
        .join(", ")}`,
      `  JSON clients' keep-alive connections to haproxy: ${jsonConnections.join(" ")}`,
      `  acknowledged mutes missing: ${missing.mutes.length} from the mute hash, ${missing.events.length} from the event stream`,
      `  watchers: ${watchers.length} (${watchers.filter((w) => w.protocol === "grpc").length} gRPC, ${
        watchers.filter((w) => w.protocol === "sse").length
      } SSE) over ${CHANNELS} channels; ${events} events; ${deliveries} deliveries, ${deliveries - unique} of them repeats; ` +
        `${gaps.length} watched channels with a gap, ${outOfOrder.length} out of order`,
      `  watch streams ended ${ends.length} times (${ends.filter((e) => e.problem === "").length} as documented: UNAVAILABLE / event: error 503), ` +
        `${watchers.reduce((n, w) => n + w.opens, 0)} opens, ${refusedOpens.length} refused${
          refusedOpens.length + ends.filter((e) => e.problem !== "").length > 0
            ? `: ${[...refusedOpens, ...ends.filter((e) => e.problem !== "").map((e) => e.problem)].slice(0, 5).join(" | ")}`
            : ""
        }`,
      `  haproxy: ${stats
        .map(
          (s) =>
            `${s.name} ${s.total} requests, ${s.retries} retried, ${s.redispatches} redispatched, ${s.connectionErrors} connection errors, ${s.responseErrors} response errors, ${s.responses5xx} 5xx`,
        )
        .join("; ")}`,
    ].join("\n"),
  );

  expect(restarts.map((r) => r.code)).toEqual([0, 0, 0]);
  // haproxy had each instance out before the instance stopped accepting.
  for (const r of restarts) expect(r.downMs).toBeLessThan(SHUTDOWN_DELAY_MS);
  expect(results.length).toBeGreaterThan(500);
  expect(problems.map((p) => `${p.key}: ${p.problem}`)).toEqual([]);
  // Not even haproxy met a refused or failed connection that it hid by trying again.
  const backend = stats.find((s) => s.name === "BACKEND");
  expect(backend).toMatchObject({
    retries: 0,
    redispatches: 0,
    connectionErrors: 0,
    responseErrors: 0,
    responses5xx: 0,
  });
  expect(missing).toEqual({ mutes: [], events: [], conversions: [] });
  expect(gaps).toEqual([]);
  expect(outOfOrder).toEqual([]);
  expect(refusedOpens).toEqual([]);
  expect(ends.filter((e) => e.problem !== "")).toEqual([]);
  // Every watcher was moved at least once: its instance was restarted under it.
  expect(watchers.filter((w) => w.opens < 2).map((w) => w.name)).toEqual([]);
}, 90_000);

test("stops cleanly: no boardline process left", async () => {
  expect(await Promise.all(instances.map((i) => i.stop()))).toEqual([0, 0, 0]);
  await eventually(() => noneAlive(instances.flatMap((i) => i.pids)), 5_000, "no boardline process left");
}, 30_000);
