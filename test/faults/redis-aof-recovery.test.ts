/**
 * Recovery after a Redis restart with a realistic append-only file: the first
 * 200 through boardline comes within 2 s of the restarted Redis answering PING
 * with PONG (done loading), the promise of docs/operations.md, "Reliability".
 *
 * The test owns a durable redis-server whose AOF it grows to about 32 MB of
 * mute-like writes (under a key prefix of its own), so a restarted Redis spends
 * most of a second or more loading it, answering LOADING meanwhile. While it
 * loads, INFO reports an ETA computed from whole seconds elapsed: just after a
 * wall-clock second turns, early in the load, that ETA is many seconds too long
 * (elapsed 1 s for a few percent loaded). A client that believes it waits that
 * long. Boardline reaches Redis through a proxy that holds its reconnection
 * until the test sees such an inflated ETA, so the client meets the worst case
 * on purpose, not by luck; Redis is killed under 4 muting clients at a moment
 * that makes its load start just before a second turns. How early is measured,
 * not guessed: each restart times the load, and the next kill is aimed so the
 * second turns about a tenth into it (a fast machine loads 32 MB in 0.4 s, and
 * a fixed aim then met the turn too late for an inflated ETA).
 */
import { rmSync } from "node:fs";
import { basename } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { eventually } from "../harness/eventually.js";
import { type GatedProxy, startGatedProxy } from "../harness/gated-proxy.js";
import { postJson } from "../harness/http.js";
import { type FillResult, fillWithMuteWrites } from "../harness/redis-fill.js";
import { type RedisServerHandle, startRedisServer } from "../harness/redis-server.js";
import { uniquePrefix } from "../harness/redis-url.js";
import { muteBody } from "../harness/request-bodies.js";
import { ROUTES } from "../harness/routes.js";
import { sleep } from "../harness/sleep.js";

const AOF_BYTES = 32 * 1024 * 1024;
const PROMISE_MS = 2000;
/**
 * An ETA at least this long, early in the load, is the inflated one this test is
 * about: a client that believed it would wait past the 2 s promise.
 */
const INFLATED_ETA_S = 3;
/**
 * Where in the load the wall-clock second should turn. Just after it, INFO's
 * ETA is (1 − f) / f seconds for f of the file loaded: about 7 s at 0.12, and
 * still inflated up to f = 0.25, which leaves room for the kill-to-load lag to vary.
 */
const TURN_AT_LOAD_FRACTION = 0.12;
/** Restarts whose loading the client met at an inflated ETA, and the most restarts tried for them. */
const WORST_CASES = 2;
const MAX_RESTARTS = 6;
/** Until a restart has been timed: how long loading takes (ms). */
const FIRST_LOAD_GUESS_MS = 1000;
/** How long to wait for a 200 at all (ioredis's default maxLoadingRetryTime is 10 s). */
const GIVE_UP_MS = 12_000;

let redis: RedisServerHandle;
let proxy: GatedProxy;
let bl: Boardline;
let watcher: Redis;
let fill: FillResult;
/** The redis-server's data directory (its AOF is big: removed afterwards). */
let dataDir: string | undefined;

beforeAll(async () => {
  redis = await startRedisServer({ durable: true });
  fill = await fillWithMuteWrites(redis.port, uniquePrefix("aof-fill"), AOF_BYTES);
  proxy = await startGatedProxy(redis.port);
  bl = await startBoardline({ redisUrl: proxy.url });
  // The test's own view of Redis, straight to it: INFO is answered while loading.
  watcher = new Redis(redis.url, {
    enableReadyCheck: false,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: 500,
    retryStrategy: () => 10,
    lazyConnect: true,
  });
  watcher.on("error", () => {});
  await watcher.connect();
  dataDir = (await watcher.config("GET", "dir"))[1];
});
afterAll(async () => {
  await bl?.close();
  watcher?.disconnect();
  await proxy?.close();
  await redis?.stop();
  if (dataDir !== undefined && basename(dataDir).startsWith("bl-redis-"))
    rmSync(dataDir, { recursive: true, force: true });
});

/** One kill and restart, as measured. */
interface Restart {
  /** From the kill to Redis answering LOADING (to aim the next kill). */
  readonly lagMs: number;
  /** From Redis answering LOADING to PONG (to aim the next kill). */
  readonly loadMs: number;
  /** Whether boardline's client reconnected while Redis reported an inflated ETA. */
  readonly worstCase: boolean;
  /** From the kill to PONG. */
  readonly downMs: number;
  /** From PONG to the first 200 through boardline. */
  readonly recoveryMs: number;
}

test("serves again within 2 s of a restarted Redis done loading a ~32 MB AOF", async () => {
  expect(fill.bytes).toBeGreaterThanOrEqual(AOF_BYTES);
  expect(await aofSize()).toBeGreaterThanOrEqual(AOF_BYTES);
  const token = await bl.token();
  const restarts: Restart[] = [];
  let aim = { lagMs: 80, loadMs: FIRST_LOAD_GUESS_MS };
  while (restarts.filter((r) => r.worstCase).length < WORST_CASES && restarts.length < MAX_RESTARTS) {
    const restart = await restartUnderLoad(token, aim);
    restarts.push(restart);
    aim = restart;
    if (restart.recoveryMs > PROMISE_MS) break;
  }
  // Redis loaded for a while each time, and the client did meet the inflated ETA...
  for (const r of restarts) expect(r.downMs).toBeGreaterThan(200);
  expect(
    restarts.some((r) => r.worstCase),
    JSON.stringify(restarts),
  ).toBe(true);
  // ...yet boardline served again within the promise every time.
  expect(restarts.filter((r) => r.recoveryMs > PROMISE_MS)).toEqual([]);
}, 90_000);

/**
 * SIGKILLs Redis under 4 muting clients at a moment that makes its load start
 * just before a wall-clock second turns (`aim`: the last restart's lag and load
 * time), holds boardline's reconnection until Redis reports an inflated ETA (or
 * is done loading), and times the first 200 after PONG.
 */
async function restartUnderLoad(token: string, aim: { lagMs: number; loadMs: number }): Promise<Restart> {
  const oks: Array<{ start: number; end: number }> = [];
  const traffic = muteTraffic(token, 4, (ok) => oks.push(ok));
  try {
    await eventually(() => oks.length > 0, 5000, "a 200 before the kill");
    const loadStartPhaseMs = 1000 - Math.min(500, TURN_AT_LOAD_FRACTION * aim.loadMs);
    await sleep((loadStartPhaseMs - aim.lagMs - (Date.now() % 1000) + 2000) % 1000);
    proxy.hold();
    const killAt = Date.now();
    redis.kill("SIGKILL");
    // restart() resolves once Redis answers PING with PONG: done loading.
    const pong = redis.restart().then(() => Date.now());
    const load = await watchLoading(pong);
    proxy.release();
    const pongAt = await pong;
    // Only a request sent after the kill proves the service is back.
    const firstOk = () => oks.find((o) => o.start > killAt)?.end;
    await eventually(() => firstOk() !== undefined, GIVE_UP_MS, "a 200 after the restart").catch(() => {});
    const loadingAt = load.loadingAt ?? killAt + aim.lagMs;
    return {
      lagMs: loadingAt - killAt,
      loadMs: Math.max(1, pongAt - loadingAt),
      worstCase: load.inflated,
      downMs: pongAt - killAt,
      recoveryMs: Math.max(0, (firstOk() ?? Number.POSITIVE_INFINITY) - pongAt),
    };
  } finally {
    await traffic.stop();
  }
}

/** Polls INFO until Redis reports an inflated loading ETA, or until `done` settles. */
async function watchLoading(done: Promise<unknown>): Promise<{ loadingAt?: number; inflated: boolean }> {
  let settled = false;
  done.then(
    () => (settled = true),
    () => (settled = true),
  );
  let loadingAt: number | undefined;
  while (!settled) {
    const info = await watcher.info("persistence").catch(() => "");
    if (infoField(info, "loading") === "1") {
      loadingAt ??= Date.now();
      if (Number(infoField(info, "loading_eta_seconds")) >= INFLATED_ETA_S) return { loadingAt, inflated: true };
    }
    await sleep(5);
  }
  return loadingAt === undefined ? { inflated: false } : { loadingAt, inflated: false };
}

/** `clients` loops of mutes through boardline, reporting each 200 (when sent, when answered), until `stop()`. */
function muteTraffic(
  token: string,
  clients: number,
  onOk: (ok: { start: number; end: number }) => void,
): { stop(): Promise<void> } {
  let running = true;
  const client = async (c: number) => {
    for (let n = 0; running; n++) {
      const body = muteBody(bl, { uid: `r${c}-${n}`, mute: n % 2 === 0 });
      const start = Date.now();
      const status = await postJson(bl, ROUTES.mute, body, { token, signal: AbortSignal.timeout(5000) }).then(
        (res) => res.status,
        () => 0,
      );
      if (status === 200) onOk({ start, end: Date.now() });
      else await sleep(20);
    }
  };
  const loops = Array.from({ length: clients }, (_, c) => client(c));
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

function infoField(info: string, name: string): string | undefined {
  return new RegExp(`^${name}:(\\S*)`, "m").exec(info)?.[1];
}

/** The AOF's size as Redis reports it (base and increments). */
async function aofSize(): Promise<number> {
  return Number(infoField(await watcher.info("persistence"), "aof_current_size") ?? 0);
}
