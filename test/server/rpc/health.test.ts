/**
 * /healthz, /readyz, /metrics, and grpc.health.v1.Health over gRPC.
 */
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { Health, HealthCheckResponse_ServingStatus as Status } from "../../../gen/grpc/health/v1/health_pb.js";
import type { MemoryStore } from "../../../src/store/memory/store.js";
import { type Boardline, startBoardline } from "../../harness/boardline.js";
import { JSON_HEADERS } from "../../harness/http.js";
import { closeSession, h1, h2, h2connect } from "../../harness/http-clients.js";
import { ROUTES } from "../../harness/routes.js";

let bl: Boardline;
beforeAll(async () => {
  bl = await startBoardline({ store: "memory" });
});
afterAll(async () => {
  await bl.close();
});
afterEach(() => {
  store().setUnavailable(false);
});

const store = () => bl.store as MemoryStore;

describe("plain HTTP endpoints", () => {
  test("GET /healthz → 200, not cached", async () => {
    const res = await h1(bl.url, "/healthz");
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ status: "ok" });
    expect(res.headers["cache-control"]).toBe("no-store");
  });

  test("HEAD /healthz → 200 without a body", async () => {
    const res = await h1(bl.url, "/healthz", { method: "HEAD" });
    expect(res.status).toBe(200);
    expect(res.body).toBe("");
  });

  test("GET /healthz?probe=1 (a query string) → 200", async () => {
    expect((await h1(bl.url, "/healthz?probe=1")).status).toBe(200);
  });

  test("GET /readyz → 200 with the store up, 503 when it is down, 200 again after", async () => {
    expect((await h1(bl.url, "/readyz")).status).toBe(200);
    store().setUnavailable(true);
    const down = await h1(bl.url, "/readyz");
    expect(down.status).toBe(503);
    expect(JSON.parse(down.body)).toMatchObject({ status: "unavailable" });
    store().setUnavailable(false);
    expect((await h1(bl.url, "/readyz")).status).toBe(200);
  });

  test("/healthz stays 200 while the store is down (liveness is not readiness)", async () => {
    store().setUnavailable(true);
    expect((await h1(bl.url, "/healthz")).status).toBe(200);
  });

  test.each(["POST", "PUT", "DELETE"])("%s /healthz → 405 with Allow", async (method) => {
    const res = await h1(bl.url, "/healthz", { method, headers: JSON_HEADERS, body: "{}" });
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe("GET, HEAD");
    expect(JSON.parse(res.body)).toMatchObject({ error: { code: 405 } });
  });

  test("GET on a JSON route → 405 with Allow: POST", async () => {
    const res = await h1(bl.url, ROUTES.mute);
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe("POST");
  });

  test("a 405's message names exactly the methods its Allow header lists", async () => {
    const plain = await h1(bl.url, "/healthz", { method: "POST", headers: JSON_HEADERS, body: "{}" });
    expect(JSON.parse(plain.body)).toEqual({ error: { code: 405, message: "method not allowed; use GET or HEAD" } });
    const route = await h1(bl.url, "/v1/channel/pstn/mute");
    expect(JSON.parse(route.body)).toEqual({ error: { code: 405, message: "method not allowed; use POST" } });
  });

  test("unknown path → 404 JSON", async () => {
    const res = await h1(bl.url, "/v2/nothing");
    expect(res.status).toBe(404);
    expect(JSON.parse(res.body)).toMatchObject({ error: { code: 404 } });
  });

  test("/metrics exposes boardline_calls_total after a call", async () => {
    const token = await bl.token();
    const call = await h1(bl.url, ROUTES.mute, {
      method: "POST",
      headers: { ...JSON_HEADERS, authorization: `Bearer ${token}` },
      body: JSON.stringify({ uid: "metrics", passphrase: bl.world.hostPassphrase, mute: true }),
    });
    expect(call.status).toBe(200);
    const res = await h1(bl.url, "/metrics");
    expect(res.status).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/plain/);
    expect(res.body).toMatch(/^# TYPE boardline_calls_total counter$/m);
    expect(res.body).toMatch(/^boardline_calls_total\{[^}]*protocol="json"[^}]*\} [1-9]/m);
    expect(res.body).toMatch(/^boardline_call_duration_seconds_count\{/m);
  });

  test("the plain endpoints work over HTTP/2 too", async () => {
    const session = await h2connect(bl.url);
    try {
      expect((await h2(session, "/healthz")).status).toBe(200);
      expect((await h2(session, "/readyz")).status).toBe(200);
      expect((await h2(session, "/metrics")).body).toContain("boardline_calls_total");
      expect((await h2(session, "/healthz", { method: "POST" })).status).toBe(405);
    } finally {
      await closeSession(session);
    }
  });
});

describe("grpc.health.v1.Health", () => {
  const grpc = () => createClient(Health, createGrpcTransport({ baseUrl: bl.url }));

  test.each(["", "channel.v1.PstnService", "whiteboard.v1.WhiteboardService"])(
    "Check(%j) → SERVING",
    async (service) => {
      const res = await grpc().check({ service });
      expect(res.status).toBe(Status.SERVING);
    },
  );

  test("Check(unknown) → NOT_FOUND", async () => {
    const err = await grpc()
      .check({ service: "no.such.Service" })
      .then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    expect(err?.code).toBe(Code.NotFound);
  });

  test("Check → NOT_SERVING while the store is down", async () => {
    store().setUnavailable(true);
    expect((await grpc().check({ service: "" })).status).toBe(Status.NOT_SERVING);
    expect((await grpc().check({ service: "channel.v1.PstnService" })).status).toBe(Status.NOT_SERVING);
    store().setUnavailable(false);
    expect((await grpc().check({ service: "" })).status).toBe(Status.SERVING);
  });

  test("Check over Connect (HTTP/1.1) too", async () => {
    const client = createClient(Health, createConnectTransport({ baseUrl: bl.url, httpVersion: "1.1" }));
    expect((await client.check({ service: "" })).status).toBe(Status.SERVING);
  });

  test("Watch streams the current status first", async () => {
    const controller = new AbortController();
    const stream = grpc().watch({ service: "channel.v1.PstnService" }, { signal: controller.signal });
    const first = await stream[Symbol.asyncIterator]().next();
    controller.abort();
    expect(first.done).toBe(false);
    expect(first.value?.status).toBe(Status.SERVING);
  });

  test("Watch reports a change to NOT_SERVING", async () => {
    const controller = new AbortController();
    const it = grpc().watch({ service: "" }, { signal: controller.signal })[Symbol.asyncIterator]();
    try {
      expect((await it.next()).value?.status).toBe(Status.SERVING);
      store().setUnavailable(true);
      expect((await it.next()).value?.status).toBe(Status.NOT_SERVING);
    } finally {
      controller.abort();
    }
  });

  test("Watch(unknown) → SERVICE_UNKNOWN", async () => {
    const controller = new AbortController();
    const it = grpc().watch({ service: "no.such.Service" }, { signal: controller.signal })[Symbol.asyncIterator]();
    const first = await it.next();
    controller.abort();
    expect(first.value?.status).toBe(Status.SERVICE_UNKNOWN);
  });
});
