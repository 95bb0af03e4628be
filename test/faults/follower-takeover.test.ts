/**
 * An instance dies while following a conversion: another instance on the same
 * Redis — here one started only afterwards, so it also shows a restart resuming
 * the unfinished tasks from Redis — finishes the task within the documented
 * bound (the 15 s lease + one tick), and the task's end is announced exactly once.
 * The kill lands at a random moment: mostly between two polls (no lease held),
 * now and then during one (the lease then holds the takeover back, up to 15 s);
 * test/services/conversion/follower.test.ts checks the lease path on purpose.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { mintToken } from "../../src/auth/jwt.js";
import { type ConversionSimulator, startConversionSimulator } from "../../src/demo/simulator/index.js";
import { silentLogger } from "../../src/log.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis/store.js";
import { eventually } from "../harness/eventually.js";
import { type MainProcess, startMainProcess } from "../harness/main-process.js";
import { deleteKeysWithPrefix, redisUrl, uniquePrefix } from "../harness/redis-url.js";
import { ROUTES } from "../harness/routes.js";

const SECRET = "takeover-test-secret-0123456789abcdef";
const SDK_TOKEN = "NETLESSSDK_takeover";
const prefix = uniquePrefix("takeover");
let sim: ConversionSimulator;
let store: RedisStore;
const started: MainProcess[] = [];

beforeAll(async () => {
  // Three pages at 1.5 s a step: Finished about 6 s after creation.
  sim = await startConversionSimulator({ credentials: { sdkTokens: [SDK_TOKEN], keys: [] }, progressMs: 1_500 });
  store = createRedisStore({ mode: "single", url: redisUrl() }, { keyPrefix: prefix, logger: silentLogger() });
  await store.waitUntilReady();
  await store.createChannel({ project: "p", channel: "c", hostPassphrase: "takeover host pass" });
  await store.setWhiteboard("p", { region: "us-sv", credentials: { sdkToken: SDK_TOKEN } });
});
afterAll(async () => {
  for (const p of started) p.proc.kill("SIGKILL");
  await store?.close();
  await sim?.close();
  await deleteKeysWithPrefix(redisUrl(), prefix);
});

const instance = async () => {
  const p = await startMainProcess({
    NODE_ENV: "production",
    LOG_LEVEL: "info", // the harness learns the port from the "listening" line
    REDIS_URL: redisUrl(),
    REDIS_KEY_PREFIX: prefix,
    JWT_SECRET: SECRET,
    CONVERSION_API_BASE: sim.url,
    CONVERSION_POLL_FIRST_MS: "100",
    CONVERSION_POLL_MAX_MS: "200",
  });
  started.push(p);
  return p;
};

test("a second instance finishes a task whose follower was killed, announcing its end once", async () => {
  const a = await instance();
  await eventually(async () => (await fetch(`${a.url}/readyz`)).status === 200, 5_000, "instance A to be ready");
  const token = await mintToken({
    secret: new TextEncoder().encode(SECRET),
    project: "p",
    subject: "presenter",
    ttlSeconds: 600,
  });
  const res = await fetch(`${a.url}${ROUTES.convert}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({
      resource_url: "https://docs.example.com/deck.pptx",
      passphrase: "takeover host pass",
      conversion_type: "static",
    }),
  });
  expect(res.status).toBe(200);
  const { task_uuid: uuid } = (await res.json()) as { task_uuid: string };

  // A follows the task until it is under way, then dies without a word.
  await eventually(
    async () => (await store.conversions.getConversion(uuid))?.status === "Converting",
    10_000,
    "A to see it converting",
  );
  a.proc.kill("SIGKILL");
  const killedAt = Date.now();

  const b = await instance();
  await eventually(
    async () => (await store.conversions.getConversion(uuid))?.status === "Finished",
    30_000,
    "B to finish the task",
  );
  expect(Date.now() - killedAt).toBeLessThan(30_000);
  const record = await store.conversions.getConversion(uuid);
  expect(record?.pages).toHaveLength(3);

  // Saved first, announced right after (another Redis slot, so a separate command).
  const announced = async () => (await store.getWhiteboardEvents("p", "c", 100)).filter((e) => e.taskUuid === uuid);
  await eventually(async () => (await announced()).length > 0, 5_000, "the end to be announced");
  expect(await announced()).toHaveLength(1);
  const changes = await store.conversions.readConversionChanges(uuid, "0", 100);
  expect(changes.filter((c) => c.status === "Finished")).toHaveLength(1);
  b.proc.kill("SIGTERM");
}, 60_000);
