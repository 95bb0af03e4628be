/**
 * The passphrase index's keys, from outside, with the real process
 * (`node dist/src/main.js`) and the built CLI on the test Redis:
 * - the upgrade: records as earlier versions wrote them (under the bare
 *   sha256 of the passphrase, no `key` field) keep opening their channels, are
 *   moved to the current key's digest by their first use or by
 *   `boardline channel reindex`, and then no key carries an unkeyed hash;
 * - the rotation of PASSPHRASE_KEYS as docs/security.md says: the new key
 *   first, the old one after it (every passphrase still opens its channel and
 *   moves on its next use), then the old key dropped;
 * - and what a copy of Redis holds: no passphrase, and no sha256 of one.
 */
import { createHash, randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { mintToken } from "../../src/auth/jwt.js";
import { keyRing } from "../../src/secrets/key-ring.js";
import { keySchema } from "../../src/store/schema/keys.js";
import { ensureBuilt } from "../harness/build-dist.js";
import { eventually } from "../harness/eventually.js";
import { type MainProcess, restartMainProcess } from "../harness/main-process.js";
import { deleteKeysWithPrefix, redisUrl, uniquePrefix } from "../harness/redis-url.js";
import { ROUTES } from "../harness/routes.js";
import { cliRunner } from "../cli/run-cli.js";

const JWT_SECRET = randomBytes(32).toString("hex");
const OLD_KEY = randomBytes(32).toString("base64");
const NEW_KEY = randomBytes(32).toString("base64");
const prefix = uniquePrefix("passkeys");
const PROJECT = `passkeys-${randomBytes(4).toString("hex")}`;
const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

let redis: Redis;
let server: MainProcess | undefined;
const { ok } = cliRunner(() => ({ prefix, jwtSecret: JWT_SECRET }));

beforeAll(async () => {
  await ensureBuilt();
  redis = new Redis(redisUrl());
}, 120_000);

afterAll(async () => {
  server?.proc.kill("SIGKILL");
  redis?.disconnect();
  await deleteKeysWithPrefix(redisUrl(), prefix);
});

/** The server on this test's Redis with `passphraseKeys` as PASSPHRASE_KEYS. */
async function restart(passphraseKeys: string): Promise<MainProcess> {
  server = await restartMainProcess(server, {
    NODE_ENV: "production",
    LOG_LEVEL: "info", // the harness learns the port from the "listening" line
    REDIS_URL: redisUrl(),
    REDIS_KEY_PREFIX: prefix,
    JWT_SECRET,
    PASSPHRASE_KEYS: passphraseKeys,
    // Every call reads Redis: a record moved or gone shows at once.
    PASSPHRASE_CACHE_MS: "0",
  });
  return server;
}

async function token(scopes: string[] = []): Promise<string> {
  const secret = new TextEncoder().encode(JWT_SECRET);
  return mintToken({
    secret,
    project: PROJECT,
    subject: `caller-${randomBytes(3).toString("hex")}`,
    ttlSeconds: 600,
    scopes,
  });
}

async function mute(passphrase: string): Promise<number> {
  const res = await fetch(`${server?.url}${ROUTES.mute}`, {
    method: "POST",
    headers: { authorization: `Bearer ${await token()}`, "content-type": "application/json" },
    body: JSON.stringify({ uid: "dial-in", passphrase, mute: true }),
  });
  await res.arrayBuffer();
  return res.status;
}

/** Reads the channel's state by a passphrase of it (either role): 200 when the passphrase opens it. */
async function opens(passphrase: string): Promise<number> {
  const res = await fetch(`${server?.url}/v1/channel/pstn/state`, {
    method: "POST",
    headers: { authorization: `Bearer ${await token()}`, "content-type": "application/json" },
    body: JSON.stringify({ passphrase }),
  });
  await res.arrayBuffer();
  return res.status;
}

/** Creates a channel through the API; its host and attendee passphrases. */
async function createChannel(channel: string): Promise<[string, string]> {
  const res = await fetch(`${server?.url}/v1/channels`, {
    method: "POST",
    headers: { authorization: `Bearer ${await token(["channels.admin"])}`, "content-type": "application/json" },
    body: JSON.stringify({ channel_id: channel }),
  });
  const body = (await res.json()) as { host_passphrase?: string; attendee_passphrase?: string };
  expect(res.status).toBe(200);
  return [String(body.host_passphrase), String(body.attendee_passphrase)];
}

/** The passphrase records under the prefix: key → the `key` field (the key id; "" when absent). */
async function passphraseRecords(): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}pass:*`, "COUNT", 500);
    cursor = next;
    for (const k of keys) found.set(k, (await redis.hget(k, "key")) ?? "");
  } while (cursor !== "0");
  return found;
}

/** Writes a channel as earlier versions did: its passphrase record under the bare sha256. */
async function writeUnkeyed(channel: string, passphrase: string): Promise<void> {
  const keys = keySchema(prefix);
  await redis.hset(keys.channelRecord(PROJECT, channel), {
    created_at: String(Date.now()),
    created_by: "an earlier version",
    [`pass:${sha256(passphrase)}`]: "host",
  });
  await redis.zadd(keys.channelIndex(PROJECT), 0, channel);
  await redis.hset(keys.passphraseByHash(sha256(passphrase)), { project: PROJECT, channel, role: "host" });
}

describe("PASSPHRASE_KEYS", () => {
  const old = {
    used: `used before keys ${randomBytes(6).toString("hex")}`,
    idle: `idle ${randomBytes(6).toString("hex")}`,
  };

  test("the upgrade: unkeyed records open their channels, move on first use or by channel reindex, and no key is left unkeyed", async () => {
    await writeUnkeyed("used", old.used);
    await writeUnkeyed("idle", old.idle);
    await restart(OLD_KEY);
    expect(await mute(old.used)).toBe(200);
    const oldId = keyRing([OLD_KEY]).current.id;
    // The used one moves in the background, the idle one stays until the reindex.
    await eventually(
      async () => !(await redis.exists(keySchema(prefix).passphraseByHash(sha256(old.used)))),
      5_000,
      "the used record to move",
    );
    expect(await redis.exists(keySchema(prefix).passphraseByHash(sha256(old.idle)))).toBe(1);
    const report = JSON.parse(
      await ok(["channel", "reindex", "--json"], { env: { PASSPHRASE_KEYS: OLD_KEY } }),
    ) as Record<string, unknown>;
    expect(report).toMatchObject({ rekeyed: 1, under_older_keys: 0, complete: true });
    const records = await passphraseRecords();
    expect([...records.values()]).toEqual([oldId, oldId]);
    for (const k of records.keys()) {
      expect(k).not.toContain(sha256(old.used));
      expect(k).not.toContain(sha256(old.idle));
    }
    expect(await mute(old.idle)).toBe(200);
    expect(await mute(old.used)).toBe(200);
    // Nothing in Redis is a passphrase or its sha256.
    const everything = JSON.stringify(await redis.keys(`${prefix}*`));
    for (const p of [old.used, old.idle]) {
      expect(everything).not.toContain(p);
      expect(everything).not.toContain(sha256(p));
    }
  }, 60_000);

  test("a rotation: the new key first and the old after it, then the old dropped; every passphrase opens its channel throughout", async () => {
    await restart(OLD_KEY);
    const made = await createChannel("made-under-old");
    const all = [...made, old.used, old.idle];
    const oldId = keyRing([OLD_KEY]).current.id;
    const newId = keyRing([NEW_KEY]).current.id;
    expect([...(await passphraseRecords()).values()]).toEqual(all.map(() => oldId));

    await restart(`${NEW_KEY},${OLD_KEY}`);
    for (const p of all) expect(await opens(p), p).toBe(200);
    expect(await mute(made[0])).toBe(200);
    // Each moved on its use: none is left under the old key.
    await eventually(
      async () => [...(await passphraseRecords()).values()].every((id) => id === newId),
      5_000,
      "every record to move to the new key",
    );
    const report = JSON.parse(
      await ok(["channel", "reindex", "--json"], { env: { PASSPHRASE_KEYS: `${NEW_KEY},${OLD_KEY}` } }),
    ) as Record<string, unknown>;
    expect(report).toMatchObject({ rekeyed: 0, under_older_keys: 0 });

    await restart(NEW_KEY);
    for (const p of all) expect(await opens(p), p).toBe(200);
    expect(await mute(made[0])).toBe(200);
    expect(await opens(`not ${made[0]}`)).toBe(403);
  }, 60_000);

  test("a record under a key that is no longer listed does not open its channel: dropping a key too early is seen", async () => {
    await restart(OLD_KEY);
    const [host] = await createChannel("dropped-too-early");
    const report = JSON.parse(
      await ok(["channel", "reindex", "--json"], { env: { PASSPHRASE_KEYS: `${NEW_KEY},${OLD_KEY}` } }),
    ) as Record<string, unknown>;
    expect(report).toMatchObject({ under_older_keys: 2 });
    await restart(NEW_KEY);
    expect(await opens(host)).toBe(403);
  }, 60_000);
});
