/** METRICS_PORT: /metrics moves off the public port to a port of its own, with /healthz and /readyz. */
import { afterAll, beforeAll, expect, test } from "vitest";
import { type Boardline, startBoardline } from "../../harness/boardline.js";
import { h1 } from "../../harness/http-clients.js";

let bl: Boardline;
beforeAll(async () => {
  bl = await startBoardline({ store: "memory", metricsPort: 0 });
});
afterAll(async () => {
  await bl.close();
});

test("the public port no longer serves /metrics, the metrics port does", async () => {
  expect(bl.server.metricsPort).not.toBe(bl.port);
  expect((await h1(bl.url, "/metrics")).status).toBe(404);
  const ops = `http://127.0.0.1:${bl.server.metricsPort}`;
  const metrics = await h1(ops, "/metrics");
  expect(metrics.status).toBe(200);
  expect(metrics.body).toContain("boardline_calls_total");
  expect((await h1(ops, "/readyz")).status).toBe(200);
  expect((await h1(ops, "/healthz")).status).toBe(200);
  expect((await h1(bl.url, "/healthz")).status).toBe(200);
});

test("the metrics port serves nothing else", async () => {
  const ops = `http://127.0.0.1:${bl.server.metricsPort}`;
  expect((await h1(ops, "/v1/channel/pstn/mute", { method: "POST", body: "{}" })).status).toBe(404);
  const post = await h1(ops, "/metrics", { method: "POST", body: "" });
  expect(post.status).toBe(405);
  expect(post.headers.allow).toBe("GET, HEAD");
});

test("without METRICS_PORT, /metrics stays on the main port", async () => {
  const plain = await startBoardline({ store: "memory" });
  try {
    expect(plain.server.metricsPort).toBe(plain.port);
    expect((await h1(plain.url, "/metrics")).status).toBe(200);
  } finally {
    await plain.close();
  }
});
