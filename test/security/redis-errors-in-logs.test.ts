/**
 * Redis refuses commands (out of memory, no permission, read-only replica,
 * scripts flushed) under mutes, state reads, guesses and channel creation,
 * with debug logging captured: the logs name the operation and the command,
 * never its arguments, so no key name (which carries a passphrase's or a
 * caller's sha256) and no passphrase reaches them.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, test } from "vitest";
import { MissLimitGuard } from "../../src/services/passphrase-guard.js";
import type { AdminStore } from "../../src/services/ports.js";
import { hashPassphrase } from "../../src/store/schema/keys.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { capturingLogger } from "../harness/capturing-logger.js";
import { postJson } from "../harness/http.js";
import { type RedisServerHandle, startRedisServer } from "../harness/redis-server.js";
import { muteBody } from "../harness/request-bodies.js";
import { ROUTES } from "../harness/routes.js";
import { STATE_ROUTE } from "../e2e/helpers/pstn-state.js";

const log = capturingLogger();
const guard = (store: AdminStore) => new MissLimitGuard(store, { attempts: 1000, windowSeconds: 60 });
let redis: RedisServerHandle;
let master: RedisServerHandle;
let raw: Redis;
let bl: Boardline;

beforeAll(async () => {
  redis = await startRedisServer();
  master = await startRedisServer();
  raw = new Redis(redis.url);
  bl = await startBoardline({ redisUrl: redis.url, logger: log.logger, guard });
});
afterAll(async () => {
  await bl.close();
  raw.disconnect();
  await redis.stop();
  await master.stop();
});

/** Every passphrase the calls below name: none may appear in the logs, nor its key's sha256. */
const used: string[] = [];
const fresh = (what: string) => {
  const p = `${what} passphrase ${used.length} Zq7`;
  used.push(p);
  return p;
};

/** A mute, a state read and a channel creation, each naming passphrases the read cache has not seen. */
async function calls(what: string): Promise<number[]> {
  const token = await bl.token(bl.world.project, `caller-${what}`);
  const mute = await postJson(bl, ROUTES.mute, muteBody(bl, { passphrase: fresh(what) }), { token });
  const read = await postJson(bl, STATE_ROUTE, { passphrase: fresh(what) }, { token });
  const created = await bl.store
    .createChannel({ project: bl.world.project, channel: `ch-${what}`, hostPassphrase: fresh(what) })
    .then(
      () => 200,
      () => 503,
    );
  return [mute.status, read.status, created];
}

test("Redis errors are logged with the command's name, never its arguments", async () => {
  await raw.config("SET", "maxmemory-policy", "noeviction");
  await raw.config("SET", "maxmemory", "1");
  expect(await calls("oom")).toContain(503);
  await raw.config("SET", "maxmemory", "0");

  await raw.call("ACL", "SETUSER", "default", "-hgetall");
  expect(await calls("noperm")).toContain(503);
  await raw.call("ACL", "SETUSER", "default", "+hgetall");

  await raw.call("REPLICAOF", "127.0.0.1", String(master.port));
  expect(await calls("readonly")).toContain(503);
  await raw.call("REPLICAOF", "NO", "ONE");

  await raw.script("FLUSH");
  await calls("noscript");

  const rejected = log.lines().filter((l) => l["msg"] === "Redis rejected a command");
  expect(rejected.length).toBeGreaterThanOrEqual(3);
  for (const line of rejected) {
    const err = line["err"] as { command?: Record<string, unknown> };
    expect(Object.keys(err.command ?? {})).toEqual(["name"]);
  }
  const text = log.text();
  expect(text).not.toContain("pass:{");
  expect(text).not.toContain("guesses:{");
  for (const p of used) {
    expect(text).not.toContain(p);
    expect(text).not.toContain(hashPassphrase(p));
  }
  const caller = (what: string) => hashPassphrase(JSON.stringify([bl.world.project, `caller-${what}`]));
  for (const what of ["oom", "noperm", "readonly"]) expect(text).not.toContain(caller(what));
});
