/**
 * TLS with ALPN: h2 and http/1.1 on one port, JSON and gRPC.
 */
import https from "node:https";
import tls, { type TLSSocket } from "node:tls";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, expect, test } from "vitest";
import { PstnService } from "../../../gen/channel/v1/pstn_pb.js";
import { type Boardline, startBoardline } from "../../harness/boardline.js";
import { JSON_HEADERS } from "../../harness/http.js";
import { closeSession, h1, h2, h2connect, raw } from "../../harness/http-clients.js";
import { ROUTES } from "../../harness/routes.js";
import { sleep } from "../../harness/sleep.js";
import { type Certificate, selfSignedCertificate } from "./self-signed-certificate.js";

let bl: Boardline;
let cert: Certificate;
let token: string;
beforeAll(async () => {
  cert = selfSignedCertificate();
  bl = await startBoardline({ store: "memory", tls: cert, headersTimeoutMs: 500 });
  token = await bl.token();
});
afterAll(async () => {
  await bl.close();
});

const muteBody = (uid: string) => JSON.stringify({ uid, passphrase: bl.world.hostPassphrase, mute: true });

test("the URL is https", () => {
  expect(bl.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
});

test("ALPN h2: JSON route over node:http2", async () => {
  const session = await h2connect(bl.url, cert.cert);
  try {
    expect(session.alpnProtocol).toBe("h2");
    expect(session.encrypted).toBe(true);
    const res = await h2(session, ROUTES.mute, {
      method: "POST",
      headers: { ...JSON_HEADERS, authorization: `Bearer ${token}` },
      body: muteBody("tls-h2"),
    });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ uid: "tls-h2", mute: true });
    const health = await h2(session, "/healthz");
    expect(health.status).toBe(200);
  } finally {
    await closeSession(session);
  }
});

test("ALPN http/1.1: JSON route over node:https", async () => {
  const res = await h1(bl.url, ROUTES.mute, {
    method: "POST",
    headers: { ...JSON_HEADERS, authorization: `Bearer ${token}` },
    body: muteBody("tls-h1"),
    ca: cert.cert,
  });
  expect(res.status).toBe(200);
  expect((res.socket as TLSSocket).alpnProtocol).toBe(false); // node:https offers no ALPN: HTTP/1.1
  expect(JSON.parse(res.body)).toEqual({ uid: "tls-h1", mute: true });
});

test("gRPC over TLS", async () => {
  const client = createClient(
    PstnService,
    createGrpcTransport({ baseUrl: bl.url, nodeOptions: { ca: cert.cert, servername: "localhost" } }),
  );
  const res = await client.mute(
    { uid: "tls-grpc", passphrase: bl.world.hostPassphrase, mute: true },
    { headers: { authorization: `Bearer ${token}` } },
  );
  expect(res).toMatchObject({ uid: "tls-grpc", mute: true });
});

test("Connect over TLS with HTTP/1.1", async () => {
  const client = createClient(
    PstnService,
    createConnectTransport({
      baseUrl: bl.url,
      httpVersion: "1.1",
      nodeOptions: { ca: cert.cert, servername: "localhost" },
    }),
  );
  const res = await client.mute(
    { uid: "tls-connect", passphrase: bl.world.hostPassphrase, mute: true },
    { headers: { authorization: `Bearer ${token}` } },
  );
  expect(res.uid).toBe("tls-connect");
});

test("a client that never starts the TLS handshake is dropped", async () => {
  const conn = await raw(bl.port);
  const ms = await conn.closed;
  expect(ms).toBeLessThan(500 + 1000);
});

/** A raw TLS connection to the server, offering only http/1.1 by ALPN. */
function connectTls(): TLSSocket {
  return tls.connect({
    host: "127.0.0.1",
    port: bl.port,
    ca: cert.cert,
    servername: "localhost",
    ALPNProtocols: ["http/1.1"],
  });
}

test("a client that completes the handshake and sends nothing is dropped", async () => {
  const started = performance.now();
  const socket = connectTls();
  let received = "";
  socket.on("data", (d: Buffer) => {
    received += d.toString("latin1");
  });
  socket.on("error", () => {});
  await new Promise<void>((resolve) => socket.once("secureConnect", () => resolve()));
  expect(socket.alpnProtocol).toBe("http/1.1");
  await new Promise<void>((resolve) => socket.once("close", () => resolve()));
  expect(performance.now() - started).toBeLessThan(500 + 1000);
  expect(received).toMatch(/^HTTP\/1\.1 408 /);
});

test("slowloris over TLS (HTTP/1.1): one header byte per 200 ms is dropped", async () => {
  const started = performance.now();
  const socket = connectTls();
  socket.on("error", () => {});
  socket.resume();
  let closed = false;
  socket.once("close", () => {
    closed = true;
  });
  await new Promise<void>((resolve) => socket.once("secureConnect", () => resolve()));
  for (const ch of `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ${"a".repeat(50)}\r\n\r\n`) {
    if (closed) break;
    socket.write(ch);
    await sleep(200);
  }
  if (!closed) await new Promise<void>((resolve) => socket.once("close", () => resolve()));
  expect(performance.now() - started).toBeLessThan(500 + 1000);
});

test("keep-alive HTTP/1.1 connections over TLS have a keep-alive timeout", async () => {
  // Node's secure server has no keep-alive timeout unless it is set: such connections lived forever.
  const agent = new https.Agent({ keepAlive: true, ca: cert.cert });
  try {
    const res = await h1(bl.url, "/healthz", { ca: cert.cert, agent });
    expect(res.status).toBe(200);
    expect(res.headers["keep-alive"]).toMatch(/^timeout=\d+$/);
  } finally {
    agent.destroy();
  }
});
