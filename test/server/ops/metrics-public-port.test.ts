/**
 * Where the real process (`node dist/src/main.js`) serves `/metrics` outside
 * demo mode: on METRICS_PORT (9090 by default) and not on the public PORT,
 * which answers it 404 in the error table's shape, unless the operator sets
 * METRICS_ON_PUBLIC_PORT=true. `/healthz` and `/readyz` stay on PORT, for load
 * balancers. (Demo mode keeps it on PORT: test/demo/demo-mode.test.ts.)
 */
import { randomInt } from "node:crypto";
import { afterAll, expect, test } from "vitest";
import { type MainProcess, startMainProcess } from "../../harness/main-process.js";
import { deleteKeysWithPrefix, redisUrl, uniquePrefix } from "../../harness/redis-url.js";

const prefix = uniquePrefix("metrics-port");
const started: MainProcess[] = [];

afterAll(async () => {
  for (const p of started) p.proc.kill("SIGKILL");
  await deleteKeysWithPrefix(redisUrl(), prefix);
});

async function production(env: Record<string, string>): Promise<MainProcess> {
  const p = await startMainProcess({
    NODE_ENV: "production",
    REDIS_URL: redisUrl(),
    REDIS_KEY_PREFIX: prefix,
    JWT_SECRET: "metrics-port-test-secret-of-at-least-32-bytes",
    CONVERSION_API_BASE: "http://127.0.0.1:9",
    ...env,
  });
  started.push(p);
  return p;
}

test("production, METRICS_PORT unset: /metrics on 9090 of HOST; PORT answers it 404 and keeps /healthz and /readyz", async () => {
  // An address of its own on the loopback network, so the fixed default port is free whatever else runs here.
  const host = `127.${randomInt(1, 255)}.${randomInt(1, 255)}.${randomInt(2, 255)}`;
  const p = await production({ HOST: host, METRICS_PORT: "" });
  expect(p.metricsPort).toBe(9090);
  expect(p.metricsUrl).toBe(`http://${host}:9090`);

  const onPublic = await fetch(`${p.url}/metrics`);
  expect(onPublic.status).toBe(404);
  expect(onPublic.headers.get("content-type")).toMatch(/^application\/json/);
  expect(await onPublic.json()).toEqual({ error: { code: 404, message: "no such route" } });

  const metrics = await fetch(`${p.metricsUrl}/metrics`);
  expect(metrics.status).toBe(200);
  expect(await metrics.text()).toContain("boardline_calls_total");
  expect((await fetch(`${p.url}/healthz`)).status).toBe(200);
  expect((await fetch(`${p.url}/readyz`)).status).toBe(200);
}, 30_000);

test("production, METRICS_PORT=0: /metrics on the port it chose, 404 on PORT", async () => {
  const p = await production({});
  expect(p.metricsPort).not.toBe(p.port);
  expect((await fetch(`${p.url}/metrics`)).status).toBe(404);
  expect((await fetch(`${p.metricsUrl}/metrics`)).status).toBe(200);
}, 30_000);

test("production, METRICS_ON_PUBLIC_PORT=true: /metrics on PORT, no port of its own", async () => {
  const p = await production({ METRICS_ON_PUBLIC_PORT: "true" });
  expect(p.metricsPort).toBe(p.port);
  const metrics = await fetch(`${p.url}/metrics`);
  expect(metrics.status).toBe(200);
  expect(await metrics.text()).toContain("boardline_calls_total");
}, 30_000);
