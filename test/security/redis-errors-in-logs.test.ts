/**
 * A Redis of the test's own refuses commands (out of memory, no permission,
 * read-only replica, scripts flushed) under mutes, state reads, guesses and
 * channel creation, with debug logging captured: the logs name the command
 * Redis refused, never its arguments, so no key name (which carries a
 * passphrase's or a caller's sha256), no hash and no passphrase reaches them.
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
/** The master the READONLY step makes `redis` a replica of. */
let master: RedisServerHandle;
let raw: Redis;
let bl: Boardline;

beforeAll(async () => {
  [redis, master] = await Promise.all([startRedisServer(), startRedisServer()]);
  raw = new Redis(redis.url);
  bl = await startBoardline({ redisUrl: redis.url, logger: log.logger, guard });
});
afterAll(async () => {
  await bl?.close();
  raw?.disconnect();
  await Promise.all([redis?.stop(), master?.stop()]);
});

/** Every passphrase the calls below name: none may appear in the logs, nor its sha256. */
const used: string[] = [];
const fresh = (what: string) => {
  const p = `${what} passphrase ${used.length} Zq7`;
  used.push(p);
  return p;
};

/**
 * A mute with the seeded host passphrase (a write), a mute and a state read with
 * passphrases the read cache has not seen (a read and a guess), and a channel
 * creation: their statuses (the creation's 200 or 503).
 */
async function calls(what: string): Promise<number[]> {
  const token = await bl.token(bl.world.project, `caller-${what}`);
  const statuses: number[] = [];
  statuses.push((await postJson(bl, ROUTES.mute, muteBody(bl, { uid: `u-${what}` }), { token })).status);
  statuses.push((await postJson(bl, ROUTES.mute, muteBody(bl, { passphrase: fresh(what) }), { token })).status);
  statuses.push((await postJson(bl, STATE_ROUTE, { passphrase: fresh(what) }, { token })).status);
  statuses.push(
    await bl.store
      .createChannel({ project: bl.world.project, channel: `ch-${what}`, hostPassphrase: fresh(what) })
      .then(
        () => 200,
        () => 503,
      ),
  );
  return statuses;
}

/** Runs `calls(what)` while `refuse` has Redis refuse commands; `restore` puts it back whatever happened. */
async function refusing(what: string, refuse: () => Promise<unknown>, restore: () => Promise<unknown>) {
  await refuse();
  try {
    return await calls(what);
  } finally {
    await restore();
  }
}

test("Redis errors are logged with the command's name, never its arguments", async () => {
  const policy = (await raw.config("GET", "maxmemory-policy"))[1] ?? "noeviction";
  const oom = await refusing(
    "oom",
    async () => {
      await raw.config("SET", "maxmemory-policy", "noeviction");
      await raw.config("SET", "maxmemory", "1");
    },
    async () => {
      await raw.config("SET", "maxmemory", "0");
      await raw.config("SET", "maxmemory-policy", policy);
    },
  );
  expect(oom).toContain(503);

  const noperm = await refusing(
    "noperm",
    () => raw.call("ACL", "SETUSER", "default", "-hgetall", "-evalsha", "-eval"),
    () => raw.call("ACL", "SETUSER", "default", "+@all"),
  );
  expect(noperm).toContain(503);

  // The replica's first sync empties it: this step goes after those that need the seeded world.
  const readonly = await refusing(
    "readonly",
    () => raw.call("REPLICAOF", "127.0.0.1", String(master.port)),
    () => raw.call("REPLICAOF", "NO", "ONE"),
  );
  expect(readonly).toContain(503);

  await raw.script("FLUSH");
  await calls("noscript");

  const text = log.text();
  expect(text).not.toContain("pass:{");
  expect(text).not.toContain("guess:{");
  expect(text).not.toContain('"args"');
  expect(text).not.toMatch(/[0-9a-f]{64}/);
  for (const p of used) {
    expect(text).not.toContain(p);
    expect(text).not.toContain(hashPassphrase(p));
  }
  expect(text).not.toContain(bl.world.hostPassphrase);
  expect(text).not.toContain(hashPassphrase(bl.world.hostPassphrase));

  const rejected = log.lines().filter((l) => l.msg === "Redis rejected a command");
  expect(rejected.length).toBeGreaterThanOrEqual(3);
  const names = new Set<string>();
  for (const line of rejected) {
    const err = line.err as Record<string, unknown>;
    expect(typeof err.type).toBe("string");
    expect(typeof err.message).toBe("string");
    expect(err.command).toMatch(/^[a-z]+$/);
    names.add(err.command as string);
  }
  expect([...names].some((name) => ["hset", "hgetall", "evalsha", "eval", "exec", "incr"].includes(name))).toBe(true);
});
