/**
 * Redis and Sentinel passwords never leave the process: the real process in
 * production, given a wrong Redis password and then a wrong Sentinel
 * password, stays unready and prints neither password, nor shows it in
 * `/metrics` or `/readyz`. The right Sentinel credentials
 * (REDIS_SENTINEL_USERNAME, REDIS_SENTINEL_PASSWORD) make it ready, so the
 * wrong one is known to have been sent.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { eventually } from "../harness/eventually.js";
import { type MainProcess, startMainProcess } from "../harness/main-process.js";
import { type RedisServerHandle, startRedisServer } from "../harness/redis-server.js";
import { type RedisSentinelHandle, startRedisSentinel } from "../harness/redis-topologies.js";
import { sleep } from "../harness/sleep.js";

const REDIS_PASSWORD = `redis-right-${randomBytes(6).toString("hex")}`;
const WRONG_REDIS_PASSWORD = `redis-wrong-${randomBytes(6).toString("hex")}`;
const SENTINEL_USER = "bl-sentinel";
const SENTINEL_PASSWORD = `sentinel-right-${randomBytes(6).toString("hex")}`;
const WRONG_SENTINEL_PASSWORD = `sentinel-wrong-${randomBytes(6).toString("hex")}`;
const PRODUCTION = { NODE_ENV: "production", JWT_SECRET: randomBytes(32).toString("base64"), LOG_LEVEL: "debug" };

let redis: RedisServerHandle;
let sentinel: RedisSentinelHandle;
let running: MainProcess | undefined;
beforeAll(async () => {
  [redis, sentinel] = await Promise.all([
    startRedisServer({
      args: ["--requirepass", REDIS_PASSWORD],
      probeAuth: { username: "default", password: REDIS_PASSWORD },
    }),
    startRedisSentinel(),
  ]);
  // The Sentinel's own users: the default one behind a password nobody here uses, and boardline's.
  const admin = new Redis(sentinel.sentinel.url);
  await admin.call("ACL", "SETUSER", SENTINEL_USER, "on", `>${SENTINEL_PASSWORD}`, "+@all");
  await admin.call("ACL", "SETUSER", "default", "resetpass", `>${randomBytes(12).toString("hex")}`);
  admin.disconnect();
}, 60_000);
afterEach(() => {
  running?.proc.kill("SIGKILL");
  running = undefined;
});
afterAll(async () => {
  await Promise.all([redis?.stop(), sentinel?.stop()]);
});

/** Starts the process, lets it try Redis for a while, and returns all it showed: output, /readyz, /metrics. */
async function everythingShown(env: Record<string, string>): Promise<{ readyz: number; shown: string }> {
  running = await startMainProcess({ ...PRODUCTION, ...env });
  await sleep(2_000);
  const readyz = await fetch(`${running.url}/readyz`);
  const metrics = await fetch(`${running.url}/metrics`);
  const shown = `${running.output()}\n${await readyz.text()}\n${await metrics.text()}`;
  return { readyz: readyz.status, shown };
}

const sentinelEnv = (password: string) => ({
  REDIS_SENTINELS: `127.0.0.1:${sentinel.sentinel.port}`,
  REDIS_SENTINEL_NAME: sentinel.masterName,
  REDIS_SENTINEL_USERNAME: SENTINEL_USER,
  REDIS_SENTINEL_PASSWORD: password,
});

describe("a wrong password", () => {
  test("for Redis: unready, and neither password is in what the process shows", async () => {
    const { readyz, shown } = await everythingShown({
      REDIS_URL: `redis://:${WRONG_REDIS_PASSWORD}@${redis.url.slice(8)}`,
    });
    expect(readyz).toBe(503);
    expect(shown).toMatch(/WRONGPASS|NOAUTH/);
    expect(shown).not.toContain(WRONG_REDIS_PASSWORD);
    expect(shown).not.toContain(REDIS_PASSWORD);
  }, 30_000);

  test("for the Sentinels: unready, and the password is in nothing the process shows", async () => {
    const { readyz, shown } = await everythingShown(sentinelEnv(WRONG_SENTINEL_PASSWORD));
    expect(readyz).toBe(503);
    expect(shown).not.toContain(WRONG_SENTINEL_PASSWORD);
    expect(shown).not.toContain(SENTINEL_PASSWORD);
  }, 30_000);

  test("…while the right Sentinel credentials make it ready, and are not shown either", async () => {
    running = await startMainProcess({ ...PRODUCTION, ...sentinelEnv(SENTINEL_PASSWORD) });
    const url = running.url;
    await eventually(async () => (await fetch(`${url}/readyz`)).status === 200, 10_000, "ready through the Sentinel");
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(`${running.output()}\n${metrics}`).not.toContain(SENTINEL_PASSWORD);
  }, 30_000);
});
