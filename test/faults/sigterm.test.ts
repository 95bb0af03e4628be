/**
 * SIGTERM under load, against the real process (`node dist/src/main.js`):
 * every request already accepted gets its full answer, new connections are
 * refused, HTTP/2 sessions get GOAWAY, and the process exits 0 within the
 * grace period. The requests held in flight are CancelConversions of a
 * submitted projector task, waiting on a slow backend cancel (ConvertFile
 * only queues, and answers at once).
 */
import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import net from "node:net";
import { afterAll, beforeAll, expect, test } from "vitest";
import { mintToken } from "../../src/auth/jwt.js";
import { type ConversionSimulator, startConversionSimulator } from "../../src/demo/simulator/index.js";
import { silentLogger } from "../../src/log.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis/store.js";
import { eventually } from "../harness/eventually.js";
import { parseBody, postJson } from "../harness/http.js";
import { h2, h2connect } from "../harness/http-clients.js";
import { type MainProcess, startMainProcess } from "../harness/main-process.js";
import { deleteKeysWithPrefix, redisUrl, uniquePrefix } from "../harness/redis-url.js";
import { ROUTES } from "../harness/routes.js";
import { sleep } from "../harness/sleep.js";

const secret = "sigterm-test-secret-0123456789abcdef";
const prefix = uniquePrefix("sigterm");
let store: RedisStore;
let sim: ConversionSimulator;
let child: ChildProcess | undefined;

beforeAll(async () => {
  store = createRedisStore({ mode: "single", url: redisUrl() }, { keyPrefix: prefix, logger: silentLogger() });
  await store.waitUntilReady();
  await store.createChannel({
    project: "p",
    channel: "c",
    hostPassphrase: "host pass",
    attendeePassphrase: "guest pass",
  });
  await store.setWhiteboard("p", { region: "eu", credentials: { sdkToken: "NETLESSSDK_sigterm" } });
  sim = await startConversionSimulator({ credentials: { sdkTokens: ["NETLESSSDK_sigterm"] } });
});
afterAll(async () => {
  child?.kill("SIGKILL");
  await sim.close();
  await store.close();
  await deleteKeysWithPrefix(redisUrl(), prefix);
});

async function startProcess(env: Record<string, string> = {}): Promise<MainProcess> {
  const started = await startMainProcess({
    REDIS_URL: redisUrl(),
    REDIS_KEY_PREFIX: prefix,
    JWT_SECRET: secret,
    CONVERSION_API_BASE: sim.url,
    SHUTDOWN_GRACE_MS: "5000",
    LOG_LEVEL: "info",
    ...env,
  });
  child = started.proc;
  return started;
}

test("SIGTERM lets accepted requests finish, refuses new connections and exits 0", async () => {
  const started = await startProcess();
  const { port, proc } = started;
  const token = await mintToken({
    secret: new TextEncoder().encode(secret),
    project: "p",
    subject: "s",
    ttlSeconds: 60,
  });
  // A projector task at the backend, under way there for a minute (a "slow" resource), so each
  // CancelConversion of it waits on the backend's answer.
  const converted = await postJson(
    started,
    ROUTES.convert,
    { resource_url: "https://example.com/slow-a.pdf", passphrase: "guest pass", conversion_type: "dynamic" },
    { token },
  );
  expect(converted.status).toBe(200);
  const uuid = parseBody<{ task_uuid: string }>(converted).task_uuid;
  await eventually(
    async () => (await store.conversions.getConversion(uuid))?.backendUuid !== undefined,
    5_000,
    "the task to be submitted",
  );
  sim.setFault({ kind: "slow", delayMs: 1000, operation: "cancel" });
  const cancelsAtBackend = () => sim.requests().filter((r) => r.method === "DELETE").length;
  const path = `${ROUTES.convert}/${uuid}`;

  // In flight over HTTP/1.1 …
  const headers = { authorization: `Bearer ${token}` };
  const h1 = Array.from({ length: 5 }, async () => {
    const res = await fetch(`${started.url}${path}`, { method: "DELETE", headers });
    return { status: res.status, body: (await res.json()) as { task_uuid?: string; status?: string } };
  });
  // … and over one HTTP/2 session.
  const session = await h2connect(started.url);
  const goaway = once(session, "goaway");
  const h2s = Array.from({ length: 5 }, () => h2(session, path, { method: "DELETE", headers }));
  // Let all ten reach the (slow) backend, then ask the process to stop.
  for (let i = 0; i < 100 && cancelsAtBackend() < 10; i++) await sleep(20);
  expect(cancelsAtBackend()).toBe(10);
  const sentAt = Date.now();
  proc.kill("SIGTERM");
  const exited = once(proc, "exit");
  await sleep(200);

  // New connections are refused while the accepted requests finish.
  const refused = await new Promise<boolean>((resolve) => {
    const s = net.connect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(false);
    });
    s.once("error", () => resolve(true));
  });
  expect(refused).toBe(true);

  const answers1 = await Promise.all(h1);
  const answers2 = await Promise.all(h2s);
  for (const a of answers1) expect(a.status).toBe(200);
  for (const a of answers1) expect(a.body).toMatchObject({ task_uuid: uuid, status: "Abort" });
  for (const a of answers2) expect(a.status).toBe(200);
  for (const a of answers2) expect(JSON.parse(a.body)).toMatchObject({ task_uuid: uuid, status: "Abort" });
  await goaway;
  session.close();

  const [code] = (await exited) as [number | null];
  expect(code).toBe(0);
  expect(Date.now() - sentAt).toBeLessThan(5000);
  child = undefined;
}, 20_000);

test("with SHUTDOWN_DELAY_MS, SIGTERM first says not ready while everything is still served, then drains", async () => {
  const DELAY_MS = 1_500;
  const started = await startProcess({ SHUTDOWN_DELAY_MS: String(DELAY_MS) });
  const { proc } = started;
  const token = await mintToken({
    secret: new TextEncoder().encode(secret),
    project: "p",
    subject: "s",
    ttlSeconds: 60,
  });
  const mute = () => postJson(started, ROUTES.mute, { uid: "u1", passphrase: "host pass", mute: true }, { token });
  // Ready once its Redis connection is (right after start it may still be connecting).
  await eventually(
    async () => (await fetch(`${started.url}/readyz`)).status === 200,
    5_000,
    "the instance to be ready",
  );
  const sentAt = performance.now();
  proc.kill("SIGTERM");
  const exited = once(proc, "exit");
  await sleep(200);

  // Not ready — a load balancer's health check now takes it out — yet new connections and calls are served.
  const readyz = await fetch(`${started.url}/readyz`);
  expect(readyz.status).toBe(503);
  expect(await readyz.json()).toMatchObject({ status: "unavailable" });
  expect((await mute()).status).toBe(200);
  const session = await h2connect(started.url);
  expect((await h2(session, "/healthz")).status).toBe(200);
  const goaway = once(session, "goaway"); // at the end of the delay, with the drain
  await goaway;
  expect(performance.now() - sentAt).toBeGreaterThanOrEqual(DELAY_MS - 50);
  session.close();

  const [code] = (await exited) as [number | null];
  expect(code).toBe(0);
  child = undefined;
}, 20_000);
