/**
 * Limits: body size (413), header size (431 / refused stream), the headers
 * deadline (idle and slowloris clients), malformed request lines (400).
 */
import http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Boardline, startBoardline } from "../../harness/boardline.js";
import { JSON_HEADERS } from "../../harness/http.js";
import { closeSession, h1, h2, h2connect, parseResponses, raw } from "../../harness/http-clients.js";
import { ROUTES } from "../../harness/routes.js";
import { sleep } from "../../harness/sleep.js";

const MAX_BODY = 1024;
/** The server's header limit (src/server/start-server.ts: 128 KiB, so huge tokens still get a 401). */
const MAX_HEADER = 128 * 1024;
const HEADERS_TIMEOUT = 500;
/** How late the server may be in dropping a client past the headers deadline. */
const MARGIN = 1200;

let bl: Boardline;
let token: string;
beforeAll(async () => {
  bl = await startBoardline({ store: "memory", maxBodyBytes: MAX_BODY, headersTimeoutMs: HEADERS_TIMEOUT });
  token = await bl.token();
});
afterAll(async () => {
  await bl.close();
});

const bigBody = () =>
  JSON.stringify({ uid: "u", passphrase: bl.world.hostPassphrase, mute: true, pad: "x".repeat(MAX_BODY) });

describe("body limit", () => {
  test("a body just under the limit is accepted", async () => {
    const base = JSON.stringify({ uid: "u", passphrase: bl.world.hostPassphrase, mute: true, pad: "" });
    const body = JSON.stringify({
      uid: "u",
      passphrase: bl.world.hostPassphrase,
      mute: true,
      pad: "x".repeat(MAX_BODY - base.length),
    });
    expect(Buffer.byteLength(body)).toBe(MAX_BODY);
    const res = await h1(bl.url, ROUTES.mute, {
      method: "POST",
      headers: { ...JSON_HEADERS, authorization: `Bearer ${token}` },
      body,
    });
    expect(res.status).toBe(200);
  });

  test("declared Content-Length over the limit → 413, connection closed", async () => {
    const conn = await raw(bl.port);
    const body = bigBody();
    conn.socket.write(
      `POST ${ROUTES.mute} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    await conn.closed;
    const [res, ...more] = parseResponses(conn.received());
    expect(res?.status).toBe(413);
    expect(res?.headers.connection).toBe("close");
    expect(JSON.parse(res?.body ?? "")).toMatchObject({ error: { code: 611 } });
    expect(more).toEqual([]);
  });

  test("a huge declared Content-Length is refused without waiting for the body", async () => {
    const conn = await raw(bl.port);
    conn.socket.write(
      `POST ${ROUTES.mute} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
        "Content-Length: 100000000\r\n\r\n{",
    );
    const ms = await conn.closed;
    expect(ms).toBeLessThan(1000);
    expect(parseResponses(conn.received())[0]?.status).toBe(413);
  });

  test("chunked body over the limit → 413, connection closed", async () => {
    const conn = await raw(bl.port);
    conn.socket.write(
      `POST ${ROUTES.mute} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n` +
        "Transfer-Encoding: chunked\r\n\r\n",
    );
    // Keep sending chunks: the server must answer and close, not wait for the end.
    const chunk = "x".repeat(300);
    let closed = false;
    void conn.closed.then(() => {
      closed = true;
    });
    for (let i = 0; i < 20 && !closed; i++) {
      conn.socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
      await sleep(20);
    }
    await conn.closed;
    const [res] = parseResponses(conn.received());
    expect(res?.status).toBe(413);
    expect(res?.headers.connection).toBe("close");
    expect(JSON.parse(res?.body ?? "")).toMatchObject({ error: { code: 611 } });
  });

  test("HTTP/2: body over the limit → 413, session stays usable", async () => {
    const session = await h2connect(bl.url);
    try {
      const res = await h2(session, ROUTES.mute, {
        method: "POST",
        headers: { ...JSON_HEADERS, authorization: `Bearer ${token}` },
        body: bigBody(),
      });
      expect(res.status).toBe(413);
      expect(JSON.parse(res.body)).toMatchObject({ error: { code: 611 } });
      const again = await h2(session, "/healthz");
      expect(again.status).toBe(200);
    } finally {
      await closeSession(session);
    }
  });
});

describe("header limit", () => {
  test("HTTP/1.1: a header block over the limit → 431", async () => {
    const conn = await raw(bl.port);
    conn.socket.write(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(MAX_HEADER + 1024)}\r\n\r\n`);
    await conn.closed;
    expect(conn.received()).toMatch(/^HTTP\/1\.1 431 /);
  });

  test("HTTP/2: a header block over the limit is refused, the session survives", async () => {
    const session = await h2connect(bl.url);
    try {
      // The limit is the server's SETTINGS_MAX_HEADER_LIST_SIZE, which applies
      // once this client has acknowledged it: wait for the settings, then a ping round trip.
      if (
        session.remoteSettings.maxHeaderListSize === undefined ||
        session.remoteSettings.maxHeaderListSize > MAX_HEADER
      ) {
        await new Promise((resolve) => session.once("remoteSettings", resolve));
      }
      expect(session.remoteSettings.maxHeaderListSize).toBeLessThanOrEqual(MAX_HEADER);
      await new Promise<void>((resolve, reject) => session.ping((err) => (err ? reject(err) : resolve())));
      const refused = await new Promise<{ code: number | undefined; status: number | undefined }>((resolve) => {
        const stream = session.request({ ":path": "/healthz", "x-big": "a".repeat(MAX_HEADER + 1024) });
        let status: number | undefined;
        stream.on("response", (h) => {
          status = Number(h[":status"]);
        });
        stream.on("error", () => {});
        stream.on("close", () => resolve({ code: stream.rstCode, status }));
        stream.resume();
      });
      if (refused.status !== undefined) expect(refused.status).toBe(431);
      else expect(refused.code).not.toBe(http2.constants.NGHTTP2_NO_ERROR);
      const ok = await h2(session, "/healthz");
      expect(ok.status).toBe(200);
    } finally {
      session.destroy();
    }
  });
});

describe("headers deadline", () => {
  test("a client that connects and sends nothing is dropped", async () => {
    const conn = await raw(bl.port);
    const ms = await conn.closed;
    expect(ms).toBeGreaterThanOrEqual(HEADERS_TIMEOUT - 50);
    expect(ms).toBeLessThan(HEADERS_TIMEOUT + MARGIN);
  });

  test("slowloris: one header byte per 200 ms is dropped", async () => {
    const conn = await raw(bl.port);
    const text = `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ${"a".repeat(100)}\r\n\r\n`;
    let closed = false;
    void conn.closed.then(() => {
      closed = true;
    });
    for (const ch of text) {
      if (closed) break;
      conn.socket.write(ch);
      await sleep(200);
    }
    const ms = await conn.closed;
    expect(ms).toBeLessThan(HEADERS_TIMEOUT + MARGIN);
    expect(conn.received()).toMatch(/^HTTP\/1\.1 408 /);
  });

  test("slowloris after the first request on a keep-alive connection is dropped too", async () => {
    const conn = await raw(bl.port);
    conn.socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    await sleep(50);
    expect(conn.received()).toMatch(/^HTTP\/1\.1 200/);
    const started = performance.now();
    let closed = false;
    void conn.closed.then(() => {
      closed = true;
    });
    for (const ch of `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ${"a".repeat(100)}\r\n\r\n`) {
      if (closed) break;
      conn.socket.write(ch);
      await sleep(200);
    }
    await conn.closed;
    expect(performance.now() - started).toBeLessThan(HEADERS_TIMEOUT + MARGIN);
    const [first, second, ...rest] = parseResponses(conn.received());
    expect(first?.status).toBe(200);
    expect(second?.status).toBe(408);
    expect(rest).toEqual([]);
  });

  test("a request line trickled in before the sniffer decides is still timed from connect", async () => {
    const conn = await raw(bl.port);
    // "P" and "PR" are prefixes of the HTTP/2 preface: the sniffer has to wait.
    let closed = false;
    void conn.closed.then(() => {
      closed = true;
    });
    for (const ch of "PRI * HTTP/2.0\r\n") {
      if (closed) break;
      conn.socket.write(ch);
      await sleep(200);
    }
    const ms = await conn.closed;
    expect(ms).toBeLessThan(HEADERS_TIMEOUT + MARGIN);
  });
});

describe("malformed requests", () => {
  test("a garbage first line → 400 and closed", async () => {
    const conn = await raw(bl.port);
    conn.socket.write("HELLO THERE\r\n\r\n");
    await conn.closed;
    expect(conn.received()).toMatch(/^HTTP\/1\.1 400 /);
  });

  test("binary garbage → 400 and closed", async () => {
    const conn = await raw(bl.port);
    conn.socket.write(
      Buffer.from([0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x00, 0x0d, 0x0a, 0x0d, 0x0a]),
    );
    await conn.closed;
    expect(conn.received()).toMatch(/^HTTP\/1\.1 400 /);
  });

  test("a broken h2 preface is not served", async () => {
    const conn = await raw(bl.port);
    conn.socket.write("PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n");
    await conn.closed;
    expect(conn.received()).not.toMatch(/ 200 /);
  });
});
