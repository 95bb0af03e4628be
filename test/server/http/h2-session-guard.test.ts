/**
 * HTTP/2 clients that never finish are cut off (src/server/http/h2-session-guard.ts):
 * headers trickled at the start of a session or between requests, a stream
 * whose body never comes, a client that advertises a zero window and never
 * reads its answer — and the session is then closed, not just sent GOAWAY.
 */
import http2 from "node:http2";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Boardline, startBoardline } from "../../harness/boardline.js";
import { h2, h2connect } from "../../harness/http-clients.js";
import { ROUTES, RPC_PATHS } from "../../harness/routes.js";
import { sleep } from "../../harness/sleep.js";

const HEADERS_MS = 500;
const REQUEST_MS = 800;
const RESPONSE_MS = 800;
const IDLE_MS = 1_200;
/** How late the server may be in acting past a deadline (its sweep, a busy machine). */
const MARGIN = 1_500;

let bl: Boardline;
beforeAll(async () => {
  bl = await startBoardline({
    store: "memory",
    headersTimeoutMs: HEADERS_MS,
    deadlines: { requestTimeoutMs: REQUEST_MS, responseTimeoutMs: RESPONSE_MS, idleTimeoutMs: IDLE_MS },
  });
});
afterAll(async () => {
  await bl.close();
});

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
const EMPTY_SETTINGS = Buffer.from([0, 0, 0, 0x04, 0, 0, 0, 0, 0]);

/** A HEADERS frame (END_HEADERS | END_STREAM) for GET / on `streamId`, with a long literal header to trickle. */
function headersFrame(streamId: number): Buffer {
  const value = Buffer.alloc(100, "a");
  // :method GET, :path /, :scheme http (static table), :authority x, then `x-pad: aaa…`, as literals.
  const block = Buffer.concat([
    Buffer.from([0x82, 0x84, 0x86, 0x41, 0x01]),
    Buffer.from("x"),
    Buffer.from([0x00, 0x05]),
    Buffer.from("x-pad"),
    Buffer.from([100]),
    value,
  ]);
  const head = Buffer.alloc(9);
  head.writeUIntBE(block.length, 0, 3);
  head[3] = 0x01;
  head[4] = 0x05;
  head.writeUInt32BE(streamId, 5);
  return Buffer.concat([head, block]);
}

/** Opens a raw h2c connection and resolves when the server closes it, with the ms it stayed open. */
function rawH2(): { socket: net.Socket; closed: Promise<number> } {
  const socket = net.connect({ host: "127.0.0.1", port: bl.port });
  socket.on("error", () => {});
  socket.on("data", () => {});
  const started = performance.now();
  const closed = new Promise<number>((resolve) => socket.once("close", () => resolve(performance.now() - started)));
  return { socket, closed };
}

/** Writes `bytes` one byte every `everyMs` until the socket closes. */
async function trickle(socket: net.Socket, bytes: Buffer, everyMs: number): Promise<void> {
  for (const b of bytes) {
    if (socket.destroyed) return;
    socket.write(Buffer.from([b]));
    await sleep(everyMs);
  }
}

describe("HTTP/2 deadlines", () => {
  test("a session whose first request headers trickle in is closed after the headers deadline", async () => {
    const { socket, closed } = rawH2();
    socket.write(Buffer.concat([PREFACE, EMPTY_SETTINGS]));
    void trickle(socket, headersFrame(1), 50);
    expect(await closed).toBeLessThan(HEADERS_MS + MARGIN);
  });

  test("headers trickled after a finished request are cut off by the idle deadline, bytes or not", async () => {
    const { socket, closed } = rawH2();
    socket.write(Buffer.concat([PREFACE, EMPTY_SETTINGS, headersFrame(1)]));
    await sleep(200); // the first request is answered
    const trickling = performance.now();
    void trickle(socket, headersFrame(3), 50);
    await closed;
    expect(performance.now() - trickling).toBeLessThan(IDLE_MS + 1_000 + MARGIN); // GOAWAY, then cut
  });

  test.each([
    ["a JSON route", ROUTES.mute, { "content-type": "application/json" }],
    ["the gRPC fast path", RPC_PATHS.mute, { "content-type": "application/grpc" }],
    ["connect-es", RPC_PATHS.mute, { "content-type": "application/proto" }],
  ])("a stream whose body never comes is reset after the request deadline (%s)", async (_, path, headers) => {
    const session = await h2connect(bl.url);
    try {
      const authorization = `Bearer ${await bl.token()}`;
      const stream = session.request({ ":method": "POST", ":path": path, authorization, ...headers });
      stream.on("error", () => {});
      stream.on("data", () => {});
      stream.write("{"); // and never more, never END_STREAM
      const started = performance.now();
      await new Promise<void>((resolve) => stream.once("close", () => resolve()));
      expect(performance.now() - started).toBeLessThan(REQUEST_MS + MARGIN);
    } finally {
      session.destroy();
    }
  });

  test("a client with a zero window that never reads its answer is reset, then its session closed", async () => {
    const session = http2.connect(bl.url, { settings: { initialWindowSize: 0 } });
    session.on("error", () => {});
    const socketClosed = new Promise<number>((resolve) => session.once("close", () => resolve(performance.now())));
    const stream = session.request({ ":method": "GET", ":path": "/metrics" });
    stream.on("error", () => {});
    stream.pause(); // never read
    const started = performance.now();
    await new Promise<void>((resolve) => stream.once("close", () => resolve()));
    expect(performance.now() - started).toBeLessThan(RESPONSE_MS + MARGIN);
    expect(stream.rstCode).toBe(http2.constants.NGHTTP2_CANCEL);
    // Nothing is open any more: GOAWAY after the idle deadline, then the socket is cut.
    expect((await socketClosed) - started).toBeLessThan(RESPONSE_MS + IDLE_MS + 1_000 + 2 * MARGIN);
  });

  test("a session that stays busy is not cut off, and a normal request still works", async () => {
    const session = await h2connect(bl.url);
    try {
      for (let i = 0; i < 6; i++) {
        expect((await h2(session, "/healthz")).status).toBe(200);
        await sleep(IDLE_MS / 3);
      }
    } finally {
      session.close();
    }
  });

  test("a client resetting streams faster than allowed (rapid reset) gets GOAWAY ENHANCE_YOUR_CALM", async () => {
    const token = await bl.token();
    const session = await h2connect(bl.url);
    const goaway = new Promise<number>((resolve) => session.once("goaway", (code: number) => resolve(code)));
    const closed = new Promise<void>((resolve) => session.once("close", () => resolve()));
    for (let i = 0; i < 300 && !session.destroyed && !session.closed; i++) {
      const s = session.request({
        ":method": "POST",
        ":path": RPC_PATHS.mute,
        "content-type": "application/proto",
        authorization: `Bearer ${token}`,
      });
      s.on("error", () => {});
      s.close(http2.constants.NGHTTP2_CANCEL);
      if (i % 20 === 0) await sleep(1);
    }
    expect(await goaway).toBe(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
    await closed;
    // Other clients are served as before.
    const other = await h2connect(bl.url);
    expect((await h2(other, "/healthz")).status).toBe(200);
    other.close();
  });

  test("a client that cancels a few calls keeps its session", async () => {
    const session = await h2connect(bl.url);
    try {
      for (let i = 0; i < 30; i++) {
        const s = session.request({ ":method": "POST", ":path": RPC_PATHS.mute, "content-type": "application/proto" });
        s.on("error", () => {});
        s.close(http2.constants.NGHTTP2_CANCEL);
      }
      await sleep(100);
      expect((await h2(session, "/healthz")).status).toBe(200);
    } finally {
      session.close();
    }
  });
});

/** A HEADERS frame (END_HEADERS, no END_STREAM) of a POST to `path`: a request whose body never comes. */
function openRequestFrame(path: string, contentType: string): Buffer {
  const literal = (name: string, value: string) =>
    Buffer.concat([
      Buffer.from([0x00, name.length]),
      Buffer.from(name),
      Buffer.from([value.length]),
      Buffer.from(value),
    ]);
  // :method POST, :scheme http (static table), then literals.
  const block = Buffer.concat([
    Buffer.from([0x83, 0x86]),
    literal(":path", path),
    literal(":authority", "x"),
    literal("content-type", contentType),
  ]);
  const head = Buffer.alloc(9);
  head.writeUIntBE(block.length, 0, 3);
  head[3] = 0x01;
  head[4] = 0x04;
  head.writeUInt32BE(1, 5);
  return Buffer.concat([head, block]);
}

/** The types of the whole frames in `bytes`. */
function frameTypes(bytes: Buffer): number[] {
  const types: number[] = [];
  for (let at = 0; at + 9 <= bytes.length; at += 9 + bytes.readUIntBE(at, 3)) types.push(bytes[at + 3] as number);
  return types;
}

describe("a client that sends a request's headers, then nothing, and reads nothing", () => {
  const LONG_IDLE_MS = 20_000;
  const HEADERS = 0x1;
  const RST_STREAM = 0x3;
  const GOAWAY = 0x7;
  let silent: Boardline;
  beforeAll(async () => {
    silent = await startBoardline({
      store: "memory",
      headersTimeoutMs: HEADERS_MS,
      deadlines: { requestTimeoutMs: REQUEST_MS, responseTimeoutMs: RESPONSE_MS, idleTimeoutMs: LONG_IDLE_MS },
    });
  });
  afterAll(async () => {
    await silent.close();
  });

  // Every protocol authenticates from the headers, before the body: the request (without a token) is
  // answered at once (401 or UNAUTHENTICATED) and its stream reset; the session is then merely idle,
  // and the idle bound applies.
  test.concurrent.each([
    ["a JSON route", ROUTES.mute, "application/json"],
    ["the gRPC fast path", RPC_PATHS.mute, "application/grpc"],
    ["Connect", RPC_PATHS.mute, "application/json"],
    ["gRPC-Web", RPC_PATHS.mute, "application/grpc-web"],
  ])("(%s) is answered at once, and its stream reset, without waiting for the body", async (_, path, type) => {
    const socket = net.connect({ host: "127.0.0.1", port: silent.port });
    socket.on("error", () => {});
    socket.pause(); // reads nothing while it waits
    socket.write(Buffer.concat([PREFACE, EMPTY_SETTINGS, openRequestFrame(path, type)]));
    await sleep(REQUEST_MS + MARGIN);
    // What the server sent meanwhile: read it all now.
    const chunks: Buffer[] = [];
    socket.on("data", (d: Buffer) => chunks.push(d));
    socket.resume();
    await sleep(500);
    socket.destroy();
    const types = frameTypes(Buffer.concat(chunks));
    expect(types).toContain(HEADERS);
    expect(types).toContain(RST_STREAM);
    expect(types).not.toContain(GOAWAY);
  });
});
