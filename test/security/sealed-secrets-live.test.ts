/**
 * Netless credentials at rest, from outside, with the real process
 * (`node dist/src/main.js`) and the built CLI on the test Redis: whatever the
 * CLI stores and the server reads, no Redis value under the prefix holds an
 * SDK token or a secret key in clear. Then SECRETS_KEYS is rotated as
 * docs/security.md says — the new key first with the old one after it, every
 * record resealed by `boardline whiteboard reseal`, then the old key dropped
 * — with conversions working at each step, a record written in clear (as
 * versions before sealing wrote it) included.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { mintToken } from "../../src/auth/jwt.js";
import { type ConversionSimulator, startConversionSimulator } from "../../src/demo/simulator/index.js";
import { silentLogger } from "../../src/log.js";
import { createSdkToken } from "../../src/netless/sdk-token.js";
import { keyRing } from "../../src/secrets/key-ring.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis/store.js";
import { ensureBuilt } from "../harness/build-dist.js";
import { eventually } from "../harness/eventually.js";
import { type MainProcess, restartMainProcess } from "../harness/main-process.js";
import { deleteKeysWithPrefix, redisUrl, uniquePrefix } from "../harness/redis-url.js";
import { ROUTES } from "../harness/routes.js";
import { cliRunner } from "../cli/run-cli.js";

const JWT_SECRET = randomBytes(32).toString("hex");
const OLD_KEY = randomBytes(32).toString("base64");
const NEW_KEY = randomBytes(32).toString("base64");
const OLD_ID = keyRing([OLD_KEY]).current.id;
const NEW_ID = keyRing([NEW_KEY]).current.id;
const prefix = uniquePrefix("sealed");
const suffix = randomBytes(4).toString("hex");
/** Settings by CLI: a key pair (boardline signs its own tokens), and an SDK token. */
const PAIR_PROJECT = `sealed-pair-${suffix}`;
const TOKEN_PROJECT = `sealed-token-${suffix}`;
/** Settings as versions before sealing wrote them: HSET in clear. */
const CLEAR_PROJECT = `sealed-clear-${suffix}`;
const PROJECTS = [PAIR_PROJECT, TOKEN_PROJECT, CLEAR_PROJECT];
const REGIONS: Record<string, string> = { [PAIR_PROJECT]: "sg", [TOKEN_PROJECT]: "eu", [CLEAR_PROJECT]: "us-sv" };
const PASSPHRASE = `sealed host ${suffix}`;
const key = { accessKey: `ak-${suffix}`, secretKey: randomBytes(24).toString("base64url") };
const SDK_TOKEN = createSdkToken({ ...key, role: "writer" });
const CLEAR_TOKEN = createSdkToken({ ...key, role: "admin" });
const SECRETS = [key.secretKey, SDK_TOKEN, CLEAR_TOKEN];

let sim: ConversionSimulator;
let store: RedisStore;
let redis: Redis;
let server: MainProcess | undefined;
const { cli, ok } = cliRunner(() => ({ prefix, jwtSecret: JWT_SECRET }));

beforeAll(async () => {
  await ensureBuilt();
  sim = await startConversionSimulator({ credentials: { keys: [key], sdkTokens: [] } });
  redis = new Redis(redisUrl());
  // Channels only: nothing secret goes through this store.
  store = createRedisStore({ mode: "single", url: redisUrl() }, { keyPrefix: prefix, logger: silentLogger() });
  await store.waitUntilReady();
  for (const project of PROJECTS) {
    await store.createChannel({ project, channel: "room", hostPassphrase: `${PASSPHRASE} ${project}` });
  }
}, 120_000);

afterAll(async () => {
  server?.proc.kill("SIGKILL");
  await store?.close();
  redis?.disconnect();
  await sim?.close();
  await deleteKeysWithPrefix(redisUrl(), prefix);
});

/** The server on this test's Redis and simulator, with `secretsKeys` as SECRETS_KEYS. */
async function restart(secretsKeys: string): Promise<MainProcess> {
  server = await restartMainProcess(server, {
    NODE_ENV: "production",
    LOG_LEVEL: "info", // the harness learns the port from the "listening" line
    REDIS_URL: redisUrl(),
    REDIS_KEY_PREFIX: prefix,
    JWT_SECRET,
    CONVERSION_API_BASE: sim.url,
    CONVERSION_API: "legacy",
    SECRETS_KEYS: secretsKeys,
  });
  return server;
}

/** A ConvertFile of `project`: its status. Each asks for a document of its own, so none reuses an earlier task. */
async function convert(project: string, resource = newDocument()): Promise<number> {
  const token = await mintToken({
    secret: new TextEncoder().encode(JWT_SECRET),
    project,
    subject: "presenter",
    ttlSeconds: 600,
  });
  const res = await fetch(`${server?.url}${ROUTES.convert}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({
      resource_url: resource,
      passphrase: `${PASSPHRASE} ${project}`,
      conversion_type: "static",
    }),
  });
  await res.arrayBuffer();
  return res.status;
}

const newDocument = () => `https://docs.example.com/deck-${randomBytes(6).toString("hex")}.pdf`;

/**
 * Each project converts, with the credentials it was given (the simulator
 * checks them): ConvertFile queues the task, and the server's submitter
 * creates it at the backend with the project's settings, read then.
 */
async function expectConversionsWork(): Promise<void> {
  for (const project of PROJECTS) {
    const resource = newDocument();
    expect(await convert(project, resource), project).toBe(200);
    const creation = () => sim.requests().find((r) => r.method === "POST" && JSON.stringify(r.body).includes(resource));
    await eventually(() => creation() !== undefined, 10_000, `the task of ${project} to be created`);
    const created = creation();
    expect(created?.headers.region).toBe(REGIONS[project]);
    const token = created?.headers.token;
    if (project === PAIR_PROJECT) expect(token).toMatch(/^NETLESSSDK_/);
    else expect(token).toBe(project === TOKEN_PROJECT ? SDK_TOKEN : CLEAR_TOKEN);
  }
}

/** Every value of every key under the prefix, whatever its type, as text. */
async function everyValueUnderPrefix(): Promise<Map<string, string>> {
  const values = new Map<string, string>();
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 500);
    cursor = next;
    for (const k of keys) {
      const type = await redis.type(k);
      const value =
        type === "hash"
          ? await redis.hgetall(k)
          : type === "string"
            ? await redis.get(k)
            : type === "stream"
              ? await redis.xrange(k, "-", "+")
              : type === "zset"
                ? await redis.zrange(k, "0", "-1", "WITHSCORES")
                : type === "set"
                  ? await redis.smembers(k)
                  : type === "list"
                    ? await redis.lrange(k, "0", "-1")
                    : type;
      values.set(k, JSON.stringify(value));
    }
  } while (cursor !== "0");
  return values;
}

/** The whiteboard record's secret field of `project`, as Redis holds it. */
async function storedSecret(project: string): Promise<string> {
  const record = await redis.hgetall(`${prefix}proj:{${project}}:whiteboard`);
  return record.sdk_token ?? record.secret_key ?? "";
}

describe("Netless credentials at rest", () => {
  test("what the CLI stores and the server reads is sealed: no Redis value holds a token or secret key", async () => {
    await restart(OLD_KEY);
    const env = { SECRETS_KEYS: OLD_KEY };
    await ok(
      ["whiteboard", "set", PAIR_PROJECT, "--region", "sg", "--access-key", key.accessKey, "--secret-key-stdin"],
      {
        env,
        input: `${key.secretKey}\n`,
      },
    );
    await ok(["whiteboard", "set", TOKEN_PROJECT, "--region", "eu"], {
      env: { ...env, BOARDLINE_SDK_TOKEN: SDK_TOKEN },
    });
    // As versions before sealing wrote it.
    await redis.hset(`${prefix}proj:{${CLEAR_PROJECT}}:whiteboard`, {
      enabled: "1",
      region: "us-sv",
      sdk_token: CLEAR_TOKEN,
    });
    await expectConversionsWork();

    const sealedAt = (await everyValueUnderPrefix()).entries();
    let looked = 0;
    for (const [k, value] of sealedAt) {
      looked++;
      if (k.endsWith(`{${CLEAR_PROJECT}}:whiteboard`)) continue; // in clear until resealed, below
      for (const secret of SECRETS) expect(value, k).not.toContain(secret);
    }
    expect(looked).toBeGreaterThan(PROJECTS.length * 2);
    expect(await storedSecret(PAIR_PROJECT)).toMatch(new RegExp(`^v1\\.${OLD_ID}\\.`));
    expect(await storedSecret(TOKEN_PROJECT)).toMatch(new RegExp(`^v1\\.${OLD_ID}\\.`));
    // Nor does the admin view of the settings show one.
    const shown = await ok(["whiteboard", "show", PAIR_PROJECT, "--json"], { env });
    for (const secret of [...SECRETS, await storedSecret(PAIR_PROJECT)]) expect(shown).not.toContain(secret);
  }, 60_000);

  test("a key missing from SECRETS_KEYS fails the conversion clearly, never showing the secret", async () => {
    const s = await restart(NEW_KEY);
    expect(await convert(PAIR_PROJECT)).toBe(500);
    await eventually(() => s.output().includes("missing from SECRETS_KEYS"), 5_000, "the failure to be logged");
    expect(s.output()).toContain(`sealed under key ${OLD_ID}`);
    for (const secret of [...SECRETS, await storedSecret(PAIR_PROJECT)]) expect(s.output()).not.toContain(secret);
    // The record in clear needs no key.
    expect(await convert(CLEAR_PROJECT)).toBe(200);
  }, 60_000);

  test("rotation: new key first, reseal, old key dropped — conversions work throughout", async () => {
    const both = `${NEW_KEY},${OLD_KEY}`;
    await restart(both);
    await expectConversionsWork();

    const first = JSON.parse(await ok(["whiteboard", "reseal", "--json"], { env: { SECRETS_KEYS: both } }));
    expect(first).toEqual({ scanned: 3, resealed: 3, changed: 0, unreadable: [], complete: true });
    for (const project of PROJECTS) expect(await storedSecret(project)).toMatch(new RegExp(`^v1\\.${NEW_ID}\\.`));
    for (const [k, value] of await everyValueUnderPrefix()) {
      for (const secret of SECRETS) expect(value, k).not.toContain(secret);
    }
    // Idempotent: nothing left to do, nothing rewritten.
    const sealed = await Promise.all(PROJECTS.map(storedSecret));
    const again = JSON.parse(await ok(["whiteboard", "reseal", "--json"], { env: { SECRETS_KEYS: both } }));
    expect(again).toMatchObject({ scanned: 3, resealed: 0, unreadable: [] });
    expect(await Promise.all(PROJECTS.map(storedSecret))).toEqual(sealed);
    await expectConversionsWork();

    await restart(NEW_KEY);
    await expectConversionsWork();
    // Run with the old key alone, the pass tells which records it cannot open and leaves them be.
    const stale = await cli(["whiteboard", "reseal", "--json"], { env: { SECRETS_KEYS: OLD_KEY } });
    expect(stale.code).toBe(1);
    expect(JSON.parse(stale.stdout)).toMatchObject({ resealed: 0, unreadable: expect.arrayContaining(PROJECTS) });
    expect(stale.stderr).toContain("missing from SECRETS_KEYS");
    expect(await Promise.all(PROJECTS.map(storedSecret))).toEqual(sealed);
  }, 90_000);
});
