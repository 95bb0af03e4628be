/**
 * Redis dies under load and comes back. The test owns a durable redis-server
 * (AOF, fsync always) so that what Redis acknowledged survives the SIGKILL.
 * While 8 clients keep muting, Redis is killed, then restarted:
 * - every request is answered within 1 s: 200, or 503 in the documented shape;
 * - /readyz turns 503 during the outage;
 * - the service recovers by itself within 2 s of the restart;
 * - every mute answered 200 is in Redis afterwards (zero acknowledged writes lost).
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { MUTE_EVENTS_MAXLEN } from "../../src/store/schema/keys.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { parseBody, postJson } from "../harness/http.js";
import { type RedisServerHandle, startRedisServer } from "../harness/redis-server.js";
import { eventsKey, muteKey, rawRedis } from "../harness/redis-state.js";
import { muteBody } from "../harness/request-bodies.js";
import { ROUTES } from "../harness/routes.js";
import { sleep } from "../harness/sleep.js";

let redis: RedisServerHandle;
let bl: Boardline;

beforeAll(async () => {
  redis = await startRedisServer({ durable: true });
  bl = await startBoardline({ redisUrl: redis.url });
});
afterAll(async () => {
  await bl?.close();
  await redis?.stop();
});

interface Outcome {
  uid: string;
  status: number;
  start: number;
  end: number;
  body: unknown;
}

test("killing Redis under load loses no acknowledged mute, answers fast, and recovers", async () => {
  const token = await bl.token();
  const outcomes: Outcome[] = [];
  const readiness: Array<{ at: number; status: number }> = [];
  const t0 = Date.now();
  const KILL_AT = 800;
  const RESTART_AT = 1800;
  const STOP_AT = 4800;
  let restartedAt = Number.POSITIVE_INFINITY;

  const worker = async (w: number) => {
    for (let n = 0; Date.now() - t0 < STOP_AT; n++) {
      const uid = `w${w}-${n}`;
      const start = Date.now();
      let status = 0;
      let body: unknown;
      try {
        const res = await postJson(bl, ROUTES.mute, muteBody(bl, { uid, mute: n % 2 === 0 }), {
          token,
          signal: AbortSignal.timeout(5000),
        });
        status = res.status;
        body = parseBody(res);
      } catch (e) {
        body = String(e);
      }
      outcomes.push({ uid, status, start, end: Date.now(), body });
      if (status !== 200) await sleep(20);
    }
  };
  const probe = async () => {
    while (Date.now() - t0 < STOP_AT) {
      const res = await fetch(`${bl.url}/readyz`, { signal: AbortSignal.timeout(5000) }).catch(() => undefined);
      readiness.push({ at: Date.now(), status: res?.status ?? 0 });
      await res?.arrayBuffer();
      await sleep(100);
    }
  };
  const chaos = async () => {
    await sleep(KILL_AT);
    redis.kill("SIGKILL");
    await sleep(RESTART_AT - KILL_AT);
    await redis.restart();
    restartedAt = Date.now();
  };
  await Promise.all([...Array.from({ length: 8 }, (_, w) => worker(w)), probe(), chaos()]);

  const ok = outcomes.filter((o) => o.status === 200);
  const unavailable = outcomes.filter((o) => o.status === 503);
  // The outage happened and was seen, and traffic flowed on both sides of it.
  expect(unavailable.length).toBeGreaterThan(0);
  expect(ok.filter((o) => o.end < t0 + KILL_AT).length).toBeGreaterThan(0);
  expect(ok.filter((o) => o.start > restartedAt).length).toBeGreaterThan(0);
  // Only 200 or a documented 503; each within 1 s.
  expect(outcomes.filter((o) => o.status !== 200 && o.status !== 503)).toEqual([]);
  for (const o of unavailable) expect(o.body).toEqual({ error: { code: 503, message: expect.any(String) } });
  const slow = outcomes.filter((o) => o.end - o.start > 1000);
  expect(slow).toEqual([]);
  // Readiness followed the outage.
  expect(readiness.some((r) => r.status === 503)).toBe(true);
  expect(readiness.at(-1)?.status).toBe(200);
  // Recovered within 2 s of the restart: every request that started later succeeded.
  const late = outcomes.filter((o) => o.start > restartedAt + 2000);
  expect(late.length).toBeGreaterThan(0);
  expect(late.filter((o) => o.status !== 200)).toEqual([]);
  // Zero acknowledged writes lost.
  const raw = rawRedis(bl);
  try {
    const stored = await raw.hgetall(muteKey(bl));
    const lost = ok.filter((o) => stored[o.uid] === undefined);
    expect(lost.map((o) => o.uid)).toEqual([]);
    // And an event each, up to the stream's cap (trimmed from its oldest end; the hash above holds every mute).
    const events = await raw.xlen(eventsKey(bl));
    expect(events).toBeGreaterThanOrEqual(Math.min(ok.length, MUTE_EVENTS_MAXLEN));
  } finally {
    raw.disconnect();
  }
}, 30_000);
