/**
 * Graceful shutdown: in-flight requests over HTTP/1.1, HTTP/2 and gRPC finish
 * with their full answers, new connections are refused, HTTP/2 sessions get
 * GOAWAY, shutdown resolves promptly — and with a short grace period stuck
 * requests are cut off. Nothing is left open afterwards. The calls held in
 * flight are CancelConversions waiting on a slow backend (backend-bound-call.ts).
 */
import http from "node:http";
import type http2 from "node:http2";
import net from "node:net";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { afterEach, expect, test } from "vitest";
import { HealthCheckResponse_ServingStatus as Status, Health } from "../../../gen/grpc/health/v1/health_pb.js";
import { WhiteboardService } from "../../../gen/whiteboard/v1/whiteboard_pb.js";
import { type Boardline, startBoardline } from "../../harness/boardline.js";
import { eventually } from "../../harness/eventually.js";
import https from "node:https";
import { type Answer, closeSession, h1, h2, h2connect, raw } from "../../harness/http-clients.js";
import { cancelPath, cancelsAtBackend, submittedTask } from "./backend-bound-call.js";
import { selfSignedCertificate } from "./self-signed-certificate.js";

const SLOW_MS = 800;

let bl: Boardline | undefined;
afterEach(async () => {
  await bl?.close();
  bl = undefined;
});

function tcpResources(): number {
  return process.getActiveResourcesInfo().filter((r) => r === "TCPSocketWrap" || r === "TCPServerWrap").length;
}

function connectOutcome(port: number): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect({ host: "127.0.0.1", port });
    s.once("connect", () => {
      s.destroy();
      resolve("connected");
    });
    s.once("error", (e: NodeJS.ErrnoException) => resolve(e.code ?? "error"));
  });
}

test("in-flight requests finish, new connections are refused, h2 gets GOAWAY, shutdown resolves promptly", async () => {
  const before = tcpResources();
  bl = await startBoardline({ store: "memory", conversionApi: "projector" });
  const b = bl;
  const token = await b.token();
  const uuid = await submittedTask(b);
  b.simulator.setFault({ kind: "slow", delayMs: SLOW_MS, operation: "cancel" });
  const headers = { authorization: `Bearer ${token}` };

  // An idle keep-alive HTTP/1.1 connection: closed at once, not waited for.
  const idleAgent = new http.Agent({ keepAlive: true });
  const idle = await h1(b.url, "/healthz", { agent: idleAgent });
  expect(idle.status).toBe(200);
  const idleClosed = new Promise<number>((resolve) => idle.socket.once("close", () => resolve(performance.now())));

  // In flight: two over HTTP/1.1, two streams on one HTTP/2 session, one gRPC call.
  const finishedAt: number[] = [];
  const stamp = <T>(p: Promise<T>) =>
    p.then((v) => {
      finishedAt.push(performance.now());
      return v;
    });
  const h1Calls = [0, 1].map(() => stamp(h1(b.url, cancelPath(uuid), { method: "DELETE", headers })));
  const session = await h2connect(b.url);
  let goawayAt: number | undefined;
  session.on("goaway", () => {
    goawayAt ??= performance.now(); // the first one; a second follows when the session closes
  });
  session.on("error", () => {});
  const h2Calls = [0, 1].map(() => stamp(h2(session, cancelPath(uuid), { method: "DELETE", headers })));
  const sessionManager = new Http2SessionManager(b.url);
  const grpcCall = stamp(
    createClient(WhiteboardService, createGrpcTransport({ baseUrl: b.url, sessionManager })).cancelConversion(
      { taskUuid: uuid },
      { headers: { authorization: `Bearer ${token}` } },
    ),
  );
  await eventually(() => cancelsAtBackend(b) >= 5, 3000, "5 requests at the backend");

  const started = performance.now();
  let resolvedAt: number | undefined;
  const shutdown = b.server.shutdown(5000).then(() => {
    resolvedAt = performance.now();
  });

  // New connections are refused as soon as shutdown has begun.
  expect(await connectOutcome(b.port)).toBe("ECONNREFUSED");

  const h1Answers = await Promise.all(h1Calls);
  const h2Answers: Answer[] = await Promise.all(h2Calls);
  const grpcAnswer = await grpcCall;
  await shutdown;

  for (const a of [...h1Answers, ...h2Answers]) {
    expect(a.status).toBe(200);
    expect(JSON.parse(a.body)).toMatchObject({ task_uuid: uuid, status: "Abort" });
  }
  for (const a of h1Answers) expect(a.headers.connection).toBe("close");
  expect(grpcAnswer).toMatchObject({ taskUuid: uuid, status: "Abort" });
  expect(goawayAt).toBeDefined();
  // GOAWAY and the idle connection's close come at once: before any in-flight stream is answered.
  // (Bounds here are relations between events, or the grace the test sets, never a guess at
  // how fast this machine is.)
  const firstAnswer = Math.min(...finishedAt);
  expect(goawayAt ?? Infinity).toBeLessThan(firstAnswer);
  expect(await idleClosed).toBeLessThan(firstAnswer);

  // Shutdown resolves once the last answer is out, not when the grace (5 s) runs out.
  expect(resolvedAt).toBeDefined();
  expect((resolvedAt ?? Infinity) - started).toBeLessThan(5000 - 1000);

  // The session was closed by the server; nothing of ours is left open.
  await eventually(() => session.closed || session.destroyed, 3000, "the h2 session to close");
  sessionManager.abort();
  idleAgent.destroy();
  await b.close();
  bl = undefined;
  await eventually(() => tcpResources() <= before, 2000, "no TCP handles left");
  expect(tcpResources()).toBe(before);
});

test("a short grace period cuts stuck requests off and shutdown still resolves", async () => {
  bl = await startBoardline({ store: "memory", conversionApi: "projector", conversionTimeoutMs: 10_000 });
  const b = bl;
  const token = await b.token();
  const uuid = await submittedTask(b);
  b.simulator.setFault({ kind: "slow", delayMs: 8000, operation: "cancel" });
  const headers = { authorization: `Bearer ${token}` };
  const h1Call = h1(b.url, cancelPath(uuid), { method: "DELETE", headers }).then(
    (a) => a.status,
    (e: Error) => e.message,
  );
  const session = await h2connect(b.url);
  session.on("error", () => {});
  const h2Call = h2(session, cancelPath(uuid), { method: "DELETE", headers }).then(
    (a) => a.status,
    (e: Error) => e.message,
  );
  await eventually(() => cancelsAtBackend(b) >= 2, 3000, "2 requests at the backend");

  const started = performance.now();
  await b.server.shutdown(300);
  const took = performance.now() - started;
  // It waits out the grace, and no longer: the stuck calls (8 s at the backend) are cut off.
  expect(took).toBeGreaterThanOrEqual(250);
  expect(took).toBeLessThan(8000 / 2);
  // Cut off: no 200 (a reset, or an empty answer).
  expect(await h1Call).not.toBe(200);
  expect(await h2Call).not.toBe(200);
  await eventually(() => session.closed || session.destroyed, 3000, "the h2 session to close");
  expect(await connectOutcome(b.port)).toBe("ECONNREFUSED");
});

test("shutdown with nothing in flight resolves at once, closing idle connections of both kinds", async () => {
  bl = await startBoardline({ store: "memory" });
  const b = bl;
  const agent = new http.Agent({ keepAlive: true });
  const idle = await h1(b.url, "/healthz", { agent });
  const session: http2.ClientHttp2Session = await h2connect(b.url);
  session.on("error", () => {});
  expect((await h2(session, "/healthz")).status).toBe(200);
  const sniffing = await raw(b.port); // connected, nothing sent yet
  const started = performance.now();
  await b.server.shutdown(5000);
  expect(performance.now() - started).toBeLessThan(5000 / 2); // it did not wait out the grace
  await eventually(
    () => idle.socket.destroyed && (session.closed || session.destroyed),
    3000,
    "client sockets to close",
  );
  await sniffing.closed;
  agent.destroy();
  await closeSession(session);
});

test("an open health Watch stream hears NOT_SERVING and ends: it does not hold shutdown up", async () => {
  bl = await startBoardline({ store: "memory" });
  const b = bl;
  const sessionManager = new Http2SessionManager(b.url);
  const controller = new AbortController();
  const it = createClient(Health, createGrpcTransport({ baseUrl: b.url, sessionManager }))
    .watch({ service: "" }, { signal: controller.signal })
    [Symbol.asyncIterator]();
  expect((await it.next()).value?.status).toBe(Status.SERVING);
  const started = performance.now();
  await b.server.shutdown(5000);
  expect(performance.now() - started).toBeLessThan(5000 / 2); // it did not wait out the grace
  // The watcher hears NOT_SERVING, then the stream ends.
  expect((await it.next()).value?.status).toBe(Status.NOT_SERVING);
  expect((await it.next()).done).toBe(true);
  controller.abort();
  sessionManager.abort();
});

test("a keep-alive HTTP/1.1 request arriving during the drain is answered with Connection: close", async () => {
  bl = await startBoardline({ store: "memory", conversionApi: "projector" });
  const b = bl;
  const token = await b.token();
  const uuid = await submittedTask(b);
  b.simulator.setFault({ kind: "slow", delayMs: 600, operation: "cancel" });
  // Keep one request in flight so the drain lasts.
  const inflight = h1(b.url, cancelPath(uuid), { method: "DELETE", headers: { authorization: `Bearer ${token}` } });
  // An established keep-alive connection, idle at the moment shutdown begins, then used again.
  const conn = await raw(b.port);
  conn.socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  await eventually(() => conn.received().includes("\r\n\r\n"), 3000, "first answer");
  await eventually(() => cancelsAtBackend(b) >= 1, 3000, "the request at the backend");
  const shutdown = b.server.shutdown(5000);
  conn.socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  await conn.closed;
  // Either the idle connection was closed before the second request (fine), or
  // the second request was answered with Connection: close.
  const text = conn.received();
  const answers = text.split("HTTP/1.1 ").length - 1;
  if (answers === 2) expect(text.split("HTTP/1.1 ")[2]).toMatch(/connection: close/i);
  expect((await inflight).status).toBe(200);
  await shutdown;
});

test("TLS: an in-flight h2 request finishes, an idle HTTP/1.1 keep-alive connection is closed at once", async () => {
  const cert = selfSignedCertificate();
  bl = await startBoardline({ store: "memory", conversionApi: "projector", tls: cert });
  const b = bl;
  const token = await b.token();
  const uuid = await submittedTask(b, cert.cert);
  const agent = new https.Agent({ keepAlive: true, ca: cert.cert });
  const idle = await h1(b.url, "/healthz", { agent, ca: cert.cert });
  expect(idle.status).toBe(200);
  const idleClosed = new Promise<number>((resolve) => idle.socket.once("close", () => resolve(performance.now())));
  b.simulator.setFault({ kind: "slow", delayMs: 500, operation: "cancel" });
  const session = await h2connect(b.url, cert.cert);
  session.on("error", () => {});
  const call = h2(session, cancelPath(uuid), { method: "DELETE", headers: { authorization: `Bearer ${token}` } });
  await eventually(() => cancelsAtBackend(b) >= 1, 3000, "the request at the backend");
  const started = performance.now();
  await b.server.shutdown(5000);
  expect(performance.now() - started).toBeLessThan(1500);
  expect((await call).status).toBe(200);
  expect((await idleClosed) - started).toBeLessThan(300);
  agent.destroy();
  await closeSession(session);
});
