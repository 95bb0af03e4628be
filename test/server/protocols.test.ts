/**
 * One cleartext port speaks HTTP/1.1 and HTTP/2 (prior knowledge): JSON,
 * Connect and gRPC, keep-alive and multiplexing, pipelining.
 */
import http from "node:http";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { PstnService } from "../../gen/channel/v1/pstn_pb.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { JSON_HEADERS } from "../harness/http.js";
import { closeSession, h1, h2, h2connect, parseResponses, raw } from "../harness/http-clients.js";
import { ROUTES } from "../harness/routes.js";
import { sleep } from "../harness/sleep.js";

let bl: Boardline;
let token: string;
beforeAll(async () => {
  bl = await startBoardline({ store: "memory" });
  token = await bl.token();
});
afterAll(async () => {
  await bl.close();
});

const muteBody = (uid: string, mute = true) => JSON.stringify({ uid, passphrase: bl.world.hostPassphrase, mute });

describe("JSON on one port", () => {
  test("over HTTP/1.1 (node:http)", async () => {
    const res = await h1(bl.url, ROUTES.mute, {
      method: "POST",
      headers: { ...JSON_HEADERS, authorization: `Bearer ${token}` },
      body: muteBody("h1-user"),
    });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ uid: "h1-user", mute: true });
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
  });

  test("over HTTP/2 prior knowledge (node:http2)", async () => {
    const session = await h2connect(bl.url);
    try {
      const res = await h2(session, ROUTES.mute, {
        method: "POST",
        headers: { ...JSON_HEADERS, authorization: `Bearer ${token}` },
        body: muteBody("h2-user", false),
      });
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body)).toEqual({ uid: "h2-user", mute: false });
    } finally {
      await closeSession(session);
    }
    const state = await bl.store.getMuteState(bl.world.project, bl.world.channel);
    expect(state).toMatchObject({ "h1-user": true, "h2-user": false });
  });

  test("an error is a JSON error over both", async () => {
    const a = await h1(bl.url, ROUTES.mute, { method: "POST", headers: JSON_HEADERS, body: muteBody("x") });
    expect(a.status).toBe(401);
    expect(JSON.parse(a.body)).toMatchObject({ error: { code: 401 } });
    const session = await h2connect(bl.url);
    try {
      const b = await h2(session, ROUTES.mute, {
        method: "POST",
        headers: JSON_HEADERS,
        body: muteBody("x"),
      });
      expect(b.status).toBe(401);
      expect(JSON.parse(b.body)).toMatchObject({ error: { code: 401 } });
    } finally {
      await closeSession(session);
    }
  });
});

describe("Connect and gRPC on the same port", () => {
  const headers = () => ({ authorization: `Bearer ${token}` });

  test.each(["1.1", "2"] as const)("Connect over HTTP/%s", async (httpVersion) => {
    const client = createClient(PstnService, createConnectTransport({ baseUrl: bl.url, httpVersion }));
    const res = await client.mute(
      { uid: `connect-${httpVersion}`, passphrase: bl.world.hostPassphrase, mute: true },
      { headers: headers() },
    );
    expect(res.uid).toBe(`connect-${httpVersion}`);
    expect(res.mute).toBe(true);
  });

  test("Connect JSON (not binary) over HTTP/1.1", async () => {
    const client = createClient(
      PstnService,
      createConnectTransport({ baseUrl: bl.url, httpVersion: "1.1", useBinaryFormat: false }),
    );
    const res = await client.mute(
      { uid: "connect-json", passphrase: bl.world.hostPassphrase, mute: false },
      { headers: headers() },
    );
    expect(res.mute).toBe(false);
  });

  test("gRPC over h2c", async () => {
    const client = createClient(PstnService, createGrpcTransport({ baseUrl: bl.url }));
    const res = await client.mute(
      { uid: "grpc-user", passphrase: bl.world.hostPassphrase, mute: true },
      { headers: headers() },
    );
    expect(res).toMatchObject({ uid: "grpc-user", mute: true });
  });
});

describe("connection reuse", () => {
  test("many HTTP/1.1 requests on one keep-alive connection", async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const sockets = new Set<unknown>();
      for (let i = 0; i < 20; i++) {
        const res = await h1(bl.url, ROUTES.mute, {
          method: "POST",
          headers: { ...JSON_HEADERS, authorization: `Bearer ${token}` },
          body: muteBody(`ka-${i}`),
          agent,
        });
        expect(res.status).toBe(200);
        expect(res.headers.connection).not.toBe("close");
        sockets.add(res.socket);
      }
      expect(sockets.size).toBe(1);
    } finally {
      agent.destroy();
    }
  });

  test("many concurrent streams on one HTTP/2 session", async () => {
    const session = await h2connect(bl.url);
    try {
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          h2(session, ROUTES.mute, {
            method: "POST",
            headers: { ...JSON_HEADERS, authorization: `Bearer ${token}` },
            body: muteBody(`mux-${i}`, i % 2 === 0),
          }),
        ),
      );
      answers.forEach((a, i) => {
        expect(a.status).toBe(200);
        expect(JSON.parse(a.body)).toEqual({ uid: `mux-${i}`, mute: i % 2 === 0 });
      });
    } finally {
      await closeSession(session);
    }
  });

  test("many gRPC calls on one HTTP/2 session", async () => {
    const sessionManager = new Http2SessionManager(bl.url);
    try {
      const client = createClient(PstnService, createGrpcTransport({ baseUrl: bl.url, sessionManager }));
      const results = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          client.mute(
            { uid: `g-${i}`, passphrase: bl.world.hostPassphrase, mute: true },
            { headers: { authorization: `Bearer ${token}` } },
          ),
        ),
      );
      expect(results.map((r) => r.uid)).toEqual(Array.from({ length: 30 }, (_, i) => `g-${i}`));
    } finally {
      sessionManager.abort();
    }
  });

  test("two pipelined HTTP/1.1 requests on one socket are both answered", async () => {
    const conn = await raw(bl.port);
    const body = (uid: string) => muteBody(uid);
    const request = (uid: string, id: string) =>
      `POST ${ROUTES.mute} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
      `X-Request-Id: ${id}\r\nContent-Length: ${Buffer.byteLength(body(uid))}\r\n\r\n${body(uid)}`;
    const healthz = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: third\r\nConnection: close\r\n\r\n";
    conn.socket.write(request("pipe-1", "first") + request("pipe-2", "second") + healthz);
    await conn.closed;
    const responses = parseResponses(conn.received());
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(responses.map((r) => r.headers["x-request-id"])).toEqual(["first", "second", "third"]);
    expect(JSON.parse(responses[0]?.body ?? "")).toEqual({ uid: "pipe-1", mute: true });
    expect(JSON.parse(responses[1]?.body ?? "")).toEqual({ uid: "pipe-2", mute: true });
  });

  test("the HTTP/2 preface arriving one byte at a time is still HTTP/2", async () => {
    const conn = await raw(bl.port);
    const preface = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    for (const byte of preface) {
      conn.socket.write(Buffer.from([byte]));
      await sleep(2);
    }
    // An empty SETTINGS frame: the server answers with its own SETTINGS (type 4).
    conn.socket.write(Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0]));
    await sleep(100);
    const got = Buffer.from(conn.received(), "latin1");
    expect(got.length).toBeGreaterThanOrEqual(9);
    expect(got[3]).toBe(4);
    conn.socket.destroy();
  });
});
