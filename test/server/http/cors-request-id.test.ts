/**
 * CORS for configured origins (actual requests and preflights) and the
 * X-Request-Id echo on JSON routes, errors, plain endpoints and RPCs.
 */
import http from "node:http";
import type http2 from "node:http2";
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { PstnService } from "../../../gen/channel/v1/pstn_pb.js";
import { type Boardline, startBoardline } from "../../harness/boardline.js";
import { JSON_HEADERS } from "../../harness/http.js";
import { closeSession, h1, h2, h2connect } from "../../harness/http-clients.js";
import { ROUTES, RPC_PATHS } from "../../harness/routes.js";

const ALLOWED = "https://app.example.com";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let bl: Boardline;
let any: Boardline;
let token: string;
beforeAll(async () => {
  [bl, any] = await Promise.all([
    startBoardline({ store: "memory", corsOrigins: [ALLOWED, "https://Other.Example.com"] }),
    startBoardline({ store: "memory", corsOrigins: ["*"] }),
  ]);
  token = await bl.token();
});
afterAll(async () => {
  await Promise.all([bl.close(), any.close()]);
});

const muteBody = () => JSON.stringify({ uid: "cors", passphrase: bl.world.hostPassphrase, mute: true });
const list = (v: string | string[] | undefined) =>
  String(v ?? "")
    .split(",")
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== "");

describe("CORS", () => {
  test("an allowed origin: ACAO echo, Vary: Origin, exposed headers on the actual request", async () => {
    const res = await h1(bl.url, ROUTES.mute, {
      method: "POST",
      headers: { ...JSON_HEADERS, authorization: `Bearer ${token}`, origin: ALLOWED },
      body: muteBody(),
    });
    expect(res.status).toBe(200);
    expect(res.headers["access-control-allow-origin"]).toBe(ALLOWED);
    expect(list(res.headers.vary)).toContain("origin");
    expect(list(res.headers["access-control-expose-headers"])).toEqual(
      expect.arrayContaining(["x-request-id", "www-authenticate"]),
    );
    expect(res.headers["access-control-allow-credentials"]).toBeUndefined();
  });

  test("an allowed origin on an error answer still gets the CORS headers (the browser must see the 401)", async () => {
    const res = await h1(bl.url, ROUTES.mute, {
      method: "POST",
      headers: { ...JSON_HEADERS, origin: ALLOWED },
      body: muteBody(),
    });
    expect(res.status).toBe(401);
    expect(res.headers["access-control-allow-origin"]).toBe(ALLOWED);
    expect(res.headers["www-authenticate"]).toMatch(/^Bearer/);
  });

  test("origins are compared case-insensitively for scheme and host", async () => {
    const res = await h1(bl.url, "/healthz", { headers: { origin: "https://other.example.com" } });
    expect(res.headers["access-control-allow-origin"]).toBe("https://other.example.com");
  });

  test("preflight: 204 with allow-methods, allow-headers and max-age", async () => {
    const res = await h1(bl.url, ROUTES.mute, {
      method: "OPTIONS",
      headers: {
        origin: ALLOWED,
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type, x-request-id, x-session-id, last-event-id",
      },
    });
    expect(res.status).toBe(204);
    expect(res.body).toBe("");
    expect(res.headers["access-control-allow-origin"]).toBe(ALLOWED);
    expect(list(res.headers["access-control-allow-methods"])).toContain("post");
    expect(list(res.headers["access-control-allow-headers"])).toEqual(
      expect.arrayContaining([
        "authorization",
        "content-type",
        "x-request-id",
        "x-session-id",
        "last-event-id",
        "idempotency-key",
      ]),
    );
    expect(Number(res.headers["access-control-max-age"])).toBeGreaterThan(0);
    expect(list(res.headers.vary)).toContain("origin");
  });

  test("preflight over HTTP/2", async () => {
    const session = await h2connect(bl.url);
    try {
      const res = await h2(session, ROUTES.convert, {
        method: "OPTIONS",
        headers: {
          origin: ALLOWED,
          "access-control-request-method": "POST",
          "access-control-request-headers": "authorization",
        },
      });
      expect(res.status).toBe(204);
      expect(res.headers["access-control-allow-origin"]).toBe(ALLOWED);
      expect(list(res.headers["access-control-allow-headers"])).toContain("authorization");
    } finally {
      await closeSession(session);
    }
  });

  test("a disallowed origin gets no ACAO on actual requests or preflights", async () => {
    const actual = await h1(bl.url, ROUTES.mute, {
      method: "POST",
      headers: { ...JSON_HEADERS, authorization: `Bearer ${token}`, origin: "https://evil.example" },
      body: muteBody(),
    });
    expect(actual.headers["access-control-allow-origin"]).toBeUndefined();
    expect(actual.headers["access-control-expose-headers"]).toBeUndefined();
    const pre = await h1(bl.url, ROUTES.mute, {
      method: "OPTIONS",
      headers: { origin: "https://evil.example", "access-control-request-method": "POST" },
    });
    expect(pre.headers["access-control-allow-origin"]).toBeUndefined();
    expect(pre.headers["access-control-allow-methods"]).toBeUndefined();
    expect(pre.headers["access-control-allow-headers"]).toBeUndefined();
  });

  test("an origin that only looks like an allowed one is refused", async () => {
    for (const origin of [`${ALLOWED}.evil.example`, "http://app.example.com", `${ALLOWED}:8443`, "null"]) {
      const res = await h1(bl.url, "/healthz", { headers: { origin } });
      expect(res.headers["access-control-allow-origin"], origin).toBeUndefined();
    }
  });

  test("no Origin header: no CORS headers, but Vary: Origin (so caches keep the two apart)", async () => {
    const res = await h1(bl.url, "/healthz");
    expect(res.headers["access-control-allow-origin"]).toBeUndefined();
    expect(list(res.headers.vary)).toContain("origin");
  });

  test("Connect from a browser origin: ACAO and the Connect/gRPC-Web headers exposed", async () => {
    const res = await h1(bl.url, RPC_PATHS.mute, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "connect-protocol-version": "1",
        authorization: `Bearer ${token}`,
        origin: ALLOWED,
      },
      body: muteBody(),
    });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ uid: "cors", mute: true });
    expect(res.headers["access-control-allow-origin"]).toBe(ALLOWED);
    expect(list(res.headers["access-control-expose-headers"])).toEqual(
      expect.arrayContaining(["grpc-status", "grpc-message", "x-request-id"]),
    );
  });

  test("OPTIONS that is not a preflight is not answered as one", async () => {
    const res = await h1(bl.url, ROUTES.mute, { method: "OPTIONS", headers: { origin: ALLOWED } });
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe("POST");
  });

  test("`*`: any origin is allowed, echoed, and Vary: Origin is kept", async () => {
    const res = await h1(any.url, "/healthz", { headers: { origin: "https://whoever.example" } });
    expect(res.status).toBe(200);
    expect(["*", "https://whoever.example"]).toContain(res.headers["access-control-allow-origin"]);
    expect(res.headers["access-control-allow-credentials"]).toBeUndefined();
    const pre = await h1(any.url, ROUTES.mute, {
      method: "OPTIONS",
      headers: {
        origin: "https://whoever.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "x-session-id",
      },
    });
    expect(pre.status).toBe(204);
    expect(list(pre.headers["access-control-allow-headers"])).toContain("x-session-id");
  });

  test("no configured origins: never any CORS headers", async () => {
    const none = await startBoardline({ store: "memory" });
    try {
      const res = await h1(none.url, "/healthz", { headers: { origin: ALLOWED } });
      expect(res.headers["access-control-allow-origin"]).toBeUndefined();
      expect(res.headers.vary).toBeUndefined();
    } finally {
      await none.close();
    }
  });
});

describe("X-Request-Id", () => {
  test("a valid id is echoed on a JSON success", async () => {
    const res = await h1(bl.url, ROUTES.mute, {
      method: "POST",
      headers: { ...JSON_HEADERS, authorization: `Bearer ${token}`, "x-request-id": "req-abc.123:xyz" },
      body: muteBody(),
    });
    expect(res.status).toBe(200);
    expect(res.headers["x-request-id"]).toBe("req-abc.123:xyz");
  });

  test("a valid id is echoed on a JSON error, a 404 and a preflight", async () => {
    const err = await h1(bl.url, ROUTES.mute, {
      method: "POST",
      headers: { ...JSON_HEADERS, "x-request-id": "e-1" },
      body: "{",
    });
    expect(err.status).toBe(401);
    expect(err.headers["x-request-id"]).toBe("e-1");
    const missing = await h1(bl.url, "/nope", { headers: { "x-request-id": "e-2" } });
    expect(missing.status).toBe(404);
    expect(missing.headers["x-request-id"]).toBe("e-2");
    const pre = await h1(bl.url, ROUTES.mute, {
      method: "OPTIONS",
      headers: { origin: ALLOWED, "access-control-request-method": "POST", "x-request-id": "e-3" },
    });
    expect(pre.headers["x-request-id"]).toBe("e-3");
  });

  test("an event stream says the id in its head, and so do its refusals, over HTTP/1.1 and HTTP/2", async () => {
    const gateway = await bl.gatewayToken();
    const watch = (headers: Record<string, string>, body = JSON.stringify({ channel_ids: ["rid"] })) => ({
      method: "POST",
      headers: { ...JSON_HEADERS, authorization: `Bearer ${gateway}`, ...headers },
      body,
    });
    const head = (o: ReturnType<typeof watch>) =>
      new Promise<http.IncomingMessage>((resolve, reject) => {
        const req = http.request(`${bl.url}/v1/channel/pstn/events:watch`, { method: o.method, headers: o.headers });
        req.on("response", (res) => {
          resolve(res);
          req.destroy(); // the stream stays open: its head is all this needs
        });
        req.on("error", reject);
        req.end(o.body);
      });
    const open = await head(watch({ "x-request-id": "s-1" }));
    expect([open.statusCode, open.headers["content-type"], open.headers["x-request-id"]]).toEqual([
      200,
      "text/event-stream; charset=utf-8",
      "s-1",
    ]);
    const generated = await head(watch({}));
    expect(generated.headers["x-request-id"]).toMatch(UUID);
    const refused = [
      await h1(bl.url, "/v1/channel/pstn/events:watch", watch({ authorization: "", "x-request-id": "s-2" })),
      await h1(bl.url, "/v1/channel/pstn/events:watch", watch({ "content-type": "text/plain", "x-request-id": "s-3" })),
      await h1(bl.url, "/v1/channel/pstn/events:watch", watch({ "x-request-id": "s-4" }, "{")),
    ];
    expect(refused.map((r) => [r.status, r.headers["x-request-id"]])).toEqual([
      [401, "s-2"],
      [415, "s-3"],
      [400, "s-4"],
    ]);
    const session = await h2connect(bl.url);
    try {
      const stream = session.request({
        ":method": "POST",
        ":path": "/v1/channel/pstn/events:watch",
        ...watch({ "x-request-id": "s-5" }).headers,
      });
      stream.end(JSON.stringify({ channel_ids: ["rid"] }));
      const headers = await new Promise<http2.IncomingHttpHeaders>((resolve) => stream.once("response", resolve));
      expect([headers[":status"], headers["x-request-id"]]).toEqual([200, "s-5"]);
      stream.close();
    } finally {
      await closeSession(session);
    }
  });

  test("absent → a generated UUID, different per request", async () => {
    const a = await h1(bl.url, "/healthz");
    const b = await h1(bl.url, ROUTES.mute, { method: "POST", headers: JSON_HEADERS, body: muteBody() });
    expect(a.headers["x-request-id"]).toMatch(UUID);
    expect(b.headers["x-request-id"]).toMatch(UUID);
    expect(a.headers["x-request-id"]).not.toBe(b.headers["x-request-id"]);
  });

  test.each([
    ["too long", "a".repeat(129)],
    ["spaces", "has space"],
    ["a quote", 'x"y'],
    ["a comma", "a,b"],
    ["a newline-free but non-ASCII value", "caf\u00e9"],
  ])("invalid (%s) → replaced by a UUID", async (_what, id) => {
    const res = await h1(bl.url, "/healthz", {
      headers: { "x-request-id": Buffer.from(id, "latin1").toString("latin1") },
    });
    expect(res.headers["x-request-id"]).toMatch(UUID);
  });

  test("over HTTP/2: echoed and generated", async () => {
    const session = await h2connect(bl.url);
    try {
      const a = await h2(session, "/healthz", { headers: { "x-request-id": "h2-id" } });
      expect(a.headers["x-request-id"]).toBe("h2-id");
      const b = await h2(session, "/healthz", { headers: { "x-request-id": "no good" } });
      expect(b.headers["x-request-id"]).toMatch(UUID);
    } finally {
      await closeSession(session);
    }
  });

  test("gRPC and Connect responses carry it, on success and on error", async () => {
    let seen: string | null = null;
    const capture: Interceptor = (next) => async (req) => {
      try {
        const res = await next(req);
        seen = res.header.get("x-request-id");
        return res;
      } catch (e) {
        seen = (e as { metadata?: Headers }).metadata?.get("x-request-id") ?? null;
        throw e;
      }
    };
    for (const transport of [
      createGrpcTransport({ baseUrl: bl.url, interceptors: [capture] }),
      createConnectTransport({ baseUrl: bl.url, httpVersion: "1.1", interceptors: [capture] }),
    ]) {
      const client = createClient(PstnService, transport);
      seen = null;
      await client.mute(
        { uid: "rid", passphrase: bl.world.hostPassphrase, mute: true },
        { headers: { authorization: `Bearer ${token}`, "x-request-id": "rpc-1" } },
      );
      expect(seen).toBe("rpc-1");
      seen = null;
      await expect(
        client.mute(
          { uid: "rid", passphrase: bl.world.hostPassphrase, mute: true },
          { headers: { "x-request-id": "rpc-2" } },
        ),
      ).rejects.toThrow();
      expect(seen).toBe("rpc-2");
      seen = null;
      await client.mute(
        { uid: "rid", passphrase: bl.world.hostPassphrase, mute: true },
        { headers: { authorization: `Bearer ${token}` } },
      );
      expect(seen).toMatch(UUID);
    }
  });
});
