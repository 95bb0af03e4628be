/**
 * Traces, end to end: the real process with tracing on exports to a receiver
 * this test started (OTLP over HTTP/JSON on loopback). A JSON mute and a gRPC
 * ConvertFile arrive as call spans with their Redis commands as children; a
 * gRPC CancelConversion has its Netless exchange as a child too. An incoming
 * `traceparent` is the call span's parent on every protocol, and the one
 * Netless receives on a cancel continues the same trace. ConvertFile only
 * queues: the submitter hands the task to Netless later, outside any call, and
 * that exchange is not traced, like the follower's polls. A caller's mistake
 * is no span error, a backend fault is; nothing a span or its resource carries
 * is a token, a passphrase or a key. With tracing off, no OpenTelemetry module
 * is loaded at all.
 */
import { once } from "node:events";
import net from "node:net";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { MuteRequestSchema, PstnService } from "../../gen/channel/v1/pstn_pb.js";
import {
  CancelConversionRequestSchema,
  ConversionSchema,
  ConvertFileRequestSchema,
  ConvertFileResponseSchema,
} from "../../gen/whiteboard/v1/whiteboard_pb.js";
import { eventually } from "../harness/eventually.js";
import { postJson } from "../harness/http.js";
import type { ReceivedSpan } from "../harness/otlp-receiver.js";
import { deleteKeysWithPrefix, redisUrl } from "../harness/redis-url.js";
import { ROUTES, RPC_PATHS } from "../harness/routes.js";
import {
  newTraceparent,
  secretsOf,
  startProcess,
  startTracedService,
  type TracedService,
  traceOf,
} from "./traced-service.js";

const CANCEL_PATH = "/whiteboard.v1.WhiteboardService/CancelConversion";
const SERVER = 2;
const CLIENT = 3;
const ERROR = 2;

let svc: TracedService;
beforeAll(async () => {
  svc = await startTracedService({ mode: "single", url: redisUrl() }, { REDIS_URL: redisUrl() });
});
afterAll(async () => {
  await svc?.close();
  if (svc !== undefined) await deleteKeysWithPrefix(redisUrl(), svc.prefix);
});

const callSpan = (spans: readonly ReceivedSpan[], name: string) =>
  spans.find((s) => s.kind === SERVER && s.name === name);
/** The mute script: EVAL on a connection's first use of it (ioredis), EVALSHA after. */
const isScript = (s: ReceivedSpan) => s.name === "EVAL" || s.name === "EVALSHA";
const childrenOf = (spans: readonly ReceivedSpan[], parent: ReceivedSpan | undefined) =>
  spans.filter((s) => parent !== undefined && s.parentSpanId === parent.spanId);

test("a JSON mute: the caller's traceparent is the call span's parent, its Redis commands are its children", async () => {
  const tp = newTraceparent();
  const body = { uid: "u-json", passphrase: svc.world.hostA, mute: true };
  const answer = await postJson(svc, ROUTES.mute, body, {
    token: await svc.token(),
    headers: { traceparent: tp.header },
  });
  expect(answer.status).toBe(200);

  const spans = await traceOf(svc.receiver, tp.traceId, (s) => {
    const call = callSpan(s, "channel.v1.PstnService/Mute");
    return childrenOf(s, call).some(isScript);
  });
  const call = callSpan(spans, "channel.v1.PstnService/Mute");
  expect(call?.parentSpanId).toBe(tp.parentId);
  expect(call?.attributes).toMatchObject({
    "rpc.system": "http_json",
    "rpc.service": "channel.v1.PstnService",
    "rpc.method": "Mute",
    "boardline.protocol": "json",
    "http.request.method": "POST",
    "http.route": ROUTES.mute,
    "http.response.status_code": 200,
    "rpc.grpc.status_code": 0,
    "boardline.code": "ok",
  });
  expect(call?.attributes["boardline.request_id"]).toBe(answer.headers.get("x-request-id"));
  expect(call?.statusCode).not.toBe(ERROR);
  expect(call?.resource["service.name"]).toBe("boardline");

  const redis = childrenOf(spans, call);
  // The passphrase lookup (the read cache is off), the guess taken beside it and given back (ZREM), and
  // the mute script, as children of the call.
  expect(redis.map((s) => s.name)).toEqual(expect.arrayContaining(["HGETALL", "ZREM"]));
  expect(redis.filter(isScript)).toHaveLength(2);
  for (const s of redis) {
    expect(s.kind).toBe(CLIENT);
    expect(s.attributes).toMatchObject({
      "db.system.name": "redis",
      "db.operation.name": s.name,
      "server.port": expect.any(Number),
    });
  }
  // The mute script's keys: the mute hash, the events stream, its meta hash, the notify channel and
  // the channel record, whose expiry the others take (src/store/redis/scripts.ts).
  expect(
    redis
      .filter(isScript)
      .map((s) => s.attributes["boardline.redis.key_count"])
      .sort(),
  ).toEqual([1, 5]);
});

/** One unary call over grpc-js (not Connect: another implementation's metadata and trailers), answering its bytes. */
async function grpcUnary(path: string, request: Uint8Array, metadata: grpc.Metadata): Promise<Buffer> {
  const client = new grpc.Client(new URL(svc.url).host, grpc.credentials.createInsecure());
  try {
    return await new Promise<Buffer>((resolve, reject) => {
      client.makeUnaryRequest(
        path,
        (m: Uint8Array) => Buffer.from(m),
        (b: Buffer) => b,
        request,
        metadata,
        (e, answer) => (e === null && answer !== undefined ? resolve(answer) : reject(e ?? new Error("no answer"))),
      );
    });
  } finally {
    client.close();
  }
}

/** The task's record as GetConversion answers it (JSON, not traced by the caller). */
async function conversionOf(uuid: string, token: string): Promise<{ status: string; backend_task_uuid?: string }> {
  const res = await fetch(`${svc.url}/v1/whiteboard/fileconvert/${uuid}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { status: string; backend_task_uuid?: string };
}

/** Waits for the submitter to hand the task to the backend (at the project's pace), and answers the backend's uuid. */
async function submitted(uuid: string, token: string): Promise<string> {
  let backend = "";
  const recorded = async () => {
    backend = (await conversionOf(uuid, token)).backend_task_uuid ?? "";
    return backend !== "";
  };
  await eventually(recorded, 10_000, "the task to be submitted");
  return backend;
}

/** A task of project B on a slow document (it stays Waiting at the backend), submitted; its ids and the token used. */
async function waitingTask(): Promise<{ uuid: string; backend: string; token: string }> {
  const token = await svc.token(svc.world.projectB);
  const body = {
    resource_url: `https://example.com/slow-${newTraceparent().parentId}.pdf`,
    passphrase: svc.world.hostB,
    conversion_type: "static",
  };
  const answer = await postJson(svc, ROUTES.convert, body, { token });
  expect(answer.status).toBe(200);
  const uuid = (JSON.parse(answer.text) as { task_uuid: string }).task_uuid;
  return { uuid, backend: await submitted(uuid, token), token };
}

test("a gRPC ConvertFile (grpc-js): the call's parent is the caller's, it queues in Redis; the submission later is not traced", async () => {
  const tp = newTraceparent();
  const metadata = new grpc.Metadata();
  const token = await svc.token();
  metadata.set("authorization", `Bearer ${token}`);
  metadata.set("traceparent", tp.header);
  const request = create(ConvertFileRequestSchema, {
    resourceUrl: `https://example.com/deck-${tp.parentId}.pptx`,
    passphrase: svc.world.guestA,
    conversionType: "static",
  });
  const bytes = await grpcUnary(RPC_PATHS.convert, toBinary(ConvertFileRequestSchema, request), metadata);
  const answer = fromBinary(ConvertFileResponseSchema, bytes);
  expect(answer).toMatchObject({ status: "Queued", reused: false });
  expect(answer.taskUuid).toMatch(/^[0-9a-f]{32}$/);

  const isRedis = (s: ReceivedSpan) => s.attributes["db.system.name"] === "redis";
  const spans = await traceOf(svc.receiver, tp.traceId, (s) =>
    childrenOf(s, callSpan(s, "whiteboard.v1.WhiteboardService/ConvertFile")).some(isRedis),
  );
  const call = callSpan(spans, "whiteboard.v1.WhiteboardService/ConvertFile");
  expect(call?.parentSpanId).toBe(tp.parentId);
  expect(call?.attributes).toMatchObject({
    "rpc.system": "grpc",
    "rpc.service": "whiteboard.v1.WhiteboardService",
    "rpc.method": "ConvertFile",
    "boardline.protocol": "grpc",
    "rpc.grpc.status_code": 0,
    "http.response.status_code": 200,
  });
  // The whiteboard record, the task's record and its place in the queue: Redis spans of the same call.
  for (const s of childrenOf(spans, call)) expect(s.kind).toBe(CLIENT);

  // The submitter hands the task to Netless later, outside any call: no span, and no trace sent along.
  const backend = await submitted(answer.taskUuid, token);
  const submission = svc.simulator
    .requests()
    .find((r) => r.method === "POST" && JSON.stringify(r.body).includes(tp.parentId));
  expect(submission).toBeDefined();
  expect(submission?.headers.traceparent).toBeUndefined();
  expect(backend).not.toBe(answer.taskUuid);
  // Spans are exported in the order they end: once a later call's spans are in, a span of the submission would be too.
  const witness = newTraceparent();
  const mute = { uid: "u-witness", passphrase: svc.world.hostA, mute: true };
  const muted = await postJson(svc, ROUTES.mute, mute, { token, headers: { traceparent: witness.header } });
  expect(muted.status).toBe(200);
  await traceOf(svc.receiver, witness.traceId, (s) => s.some(isScript));
  expect(svc.receiver.spans().filter((s) => s.name === "netless create")).toEqual([]);
  expect(childrenOf(svc.receiver.spans(), call).filter(isRedis).length).toBeGreaterThan(1);
});

test("a gRPC CancelConversion (grpc-js) of a submitted task: Netless gets the same trace from its client span", async () => {
  const task = await waitingTask();
  const tp = newTraceparent();
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${task.token}`);
  metadata.set("traceparent", tp.header);
  metadata.set("tracestate", "caller=7f3a");
  const request = create(CancelConversionRequestSchema, { taskUuid: task.uuid });
  const bytes = await grpcUnary(CANCEL_PATH, toBinary(CancelConversionRequestSchema, request), metadata);
  expect(fromBinary(ConversionSchema, bytes)).toMatchObject({ taskUuid: task.uuid, status: "Abort" });

  const spans = await traceOf(svc.receiver, tp.traceId, (s) =>
    childrenOf(s, callSpan(s, "whiteboard.v1.WhiteboardService/CancelConversion")).some(
      (c) => c.name === "netless cancel",
    ),
  );
  const call = callSpan(spans, "whiteboard.v1.WhiteboardService/CancelConversion");
  expect(call?.parentSpanId).toBe(tp.parentId);
  expect(call?.attributes).toMatchObject({
    "rpc.system": "grpc",
    "rpc.method": "CancelConversion",
    "boardline.protocol": "grpc",
    "rpc.grpc.status_code": 0,
  });
  const netless = childrenOf(spans, call).find((s) => s.name === "netless cancel");
  expect(netless?.kind).toBe(CLIENT);
  expect(netless?.attributes).toMatchObject({
    "http.request.method": "DELETE",
    "http.response.status_code": 200,
    "server.address": "127.0.0.1",
    "url.full": `${svc.simulator.url}/v5/projector/tasks/${task.backend}`,
    "boardline.netless.operation": "cancel",
  });

  // What Netless received continues the trace, from the client span.
  const received = svc.simulator.requests().find((r) => (r.headers.traceparent ?? "").includes(tp.traceId));
  expect(received?.method).toBe("DELETE");
  expect(received?.headers.traceparent).toBe(`00-${tp.traceId}-${netless?.spanId}-01`);
  expect(received?.headers.tracestate).toBe("caller=7f3a");
});

describe("every protocol honours an incoming traceparent", () => {
  const transports = {
    "connect (HTTP/1.1, JSON)": () => createConnectTransport({ baseUrl: svc.url, httpVersion: "1.1" }),
    "connect (HTTP/2, binary)": () =>
      createConnectTransport({ baseUrl: svc.url, httpVersion: "2", useBinaryFormat: true }),
    "gRPC-Web": () => createGrpcWebTransport({ baseUrl: svc.url, httpVersion: "1.1" }),
    "gRPC (the fast path)": () => createGrpcTransport({ baseUrl: svc.url }),
  };
  const expected = {
    "connect (HTTP/1.1, JSON)": { "rpc.system": "connect_rpc", "boardline.protocol": "connect" },
    "connect (HTTP/2, binary)": { "rpc.system": "connect_rpc", "boardline.protocol": "connect" },
    "gRPC-Web": { "rpc.system": "grpc", "boardline.protocol": "grpc-web" },
    "gRPC (the fast path)": { "rpc.system": "grpc", "boardline.protocol": "grpc" },
  } as const;

  test.each(Object.keys(transports) as Array<keyof typeof transports>)("%s", async (name) => {
    const tp = newTraceparent();
    const pstn = createClient(PstnService, transports[name]());
    const request = create(MuteRequestSchema, { uid: `u-${name}`, passphrase: svc.world.hostA, mute: false });
    const headers = { authorization: `Bearer ${await svc.token()}`, traceparent: tp.header };
    await pstn.mute(request, { headers });
    const spans = await traceOf(svc.receiver, tp.traceId, (s) =>
      childrenOf(s, callSpan(s, "channel.v1.PstnService/Mute")).some(isScript),
    );
    const call = callSpan(spans, "channel.v1.PstnService/Mute");
    expect(call?.parentSpanId).toBe(tp.parentId);
    expect(call?.attributes).toMatchObject({ ...expected[name], "rpc.grpc.status_code": 0, "boardline.code": "ok" });
  });
});

test("a caller's mistake is answered in the span but is no span error; a backend fault is one, on both spans", async () => {
  const refused = newTraceparent();
  const body = { uid: "u-refused", passphrase: svc.world.hostA, mute: true };
  const answer = await postJson(svc, ROUTES.mute, body, {
    token: "not-a-jwt",
    headers: { traceparent: refused.header },
  });
  expect(answer.status).toBe(401);
  const [denied] = await traceOf(svc.receiver, refused.traceId, (s) => s.length > 0);
  expect(denied?.attributes).toMatchObject({
    "http.response.status_code": 401,
    "rpc.grpc.status_code": 16,
    "boardline.code": "401",
  });
  expect(denied?.statusCode).not.toBe(ERROR);

  // A backend fault: a cancel that Netless answers 500 (ConvertFile only queues; it meets no backend).
  const task = await waitingTask();
  const faulty = newTraceparent();
  svc.simulator.setFault({ kind: "status", status: 500, operation: "cancel" });
  try {
    const failed = await fetch(`${svc.url}/v1/whiteboard/fileconvert/${task.uuid}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${task.token}`, traceparent: faulty.header },
    });
    expect(failed.status).toBe(503);
  } finally {
    svc.simulator.clearFaults();
  }
  const spans = await traceOf(svc.receiver, faulty.traceId, (s) =>
    childrenOf(s, callSpan(s, "whiteboard.v1.WhiteboardService/CancelConversion")).some(
      (c) => c.name === "netless cancel",
    ),
  );
  const call = callSpan(spans, "whiteboard.v1.WhiteboardService/CancelConversion");
  expect(call?.statusCode).toBe(ERROR);
  expect(call?.attributes).toMatchObject({
    "http.response.status_code": 503,
    "rpc.grpc.status_code": 14,
    "boardline.code": "503",
  });
  const netless = childrenOf(spans, call).find((s) => s.name === "netless cancel");
  expect(netless?.statusCode).toBe(ERROR);
  expect(netless?.attributes["http.response.status_code"]).toBe(500);
});

test("a watch (server-sent events): one span for the whole stream, ended with it", async () => {
  const token = await svc.token(svc.world.projectB);
  const convert = { resource_url: "https://example.com/w.pdf", passphrase: svc.world.hostB, conversion_type: "static" };
  const created = await postJson(svc, ROUTES.convert, convert, { token });
  const uuid = (JSON.parse(created.text) as { task_uuid: string }).task_uuid;
  const tp = newTraceparent();
  const headers = { authorization: `Bearer ${token}`, traceparent: tp.header };
  const res = await fetch(`${svc.url}/v1/whiteboard/fileconvert/${uuid}/watch`, { headers });
  expect(res.status).toBe(200);
  expect(await res.text()).toContain('"status":"Finished"'); // the stream ends after the terminal state

  const spans = await traceOf(svc.receiver, tp.traceId, (s) => s.some((c) => c.kind === SERVER));
  const watch = spans.find((c) => c.kind === SERVER);
  expect(watch?.name).toBe("whiteboard.v1.WhiteboardService/WatchConversion");
  expect(watch?.parentSpanId).toBe(tp.parentId);
  expect(watch?.attributes).toMatchObject({
    "http.route": "/v1/whiteboard/fileconvert/{task_uuid}/watch",
    "http.request.method": "GET",
    "boardline.code": "ok",
  });
  // Its first read of the task's record is a child; the watch reader's later rounds are not (background).
  expect(childrenOf(spans, watch).map((c) => c.name)).toContain("HGETALL");
});

test("the submissions to Netless, the follower's polls and the background Redis commands are not traced", async () => {
  // The tasks queued above were submitted, and the follower polls them (first after 100 ms).
  await eventually(() => svc.simulator.requests().some((r) => r.method === "GET"), 5_000, "a poll of the backend");
  const background = svc.simulator.requests().filter((r) => r.method === "GET" || r.method === "POST");
  expect(background.map((r) => r.method)).toContain("POST");
  for (const r of background) expect(r.headers.traceparent, `${r.method} ${r.path}`).toBeUndefined();
  // Every client span (Redis, Netless) hangs off a call span: none comes from background work.
  const spans = svc.receiver.spans();
  const calls = new Set(spans.filter((s) => s.kind === SERVER).map((s) => s.spanId));
  const clients = spans.filter((s) => s.kind === CLIENT);
  expect(clients.length).toBeGreaterThan(5);
  for (const s of clients) expect(calls.has(s.parentSpanId), `${s.name} has a call span as parent`).toBe(true);
});

test("no span attribute (nor resource attribute) holds a token, a passphrase or a key", async () => {
  const netlessTokens = svc.simulator
    .requests()
    .map((r) => String(r.headers.token ?? ""))
    .filter((t) => t !== "");
  const secrets = [...secretsOf(svc.world), ...svc.tokens, ...netlessTokens];
  expect(netlessTokens.length).toBeGreaterThan(1); // signed from the key pair, and project B's SDK token
  expect(svc.tokens.length).toBeGreaterThan(5);
  const spans = svc.receiver.spans();
  expect(spans.length).toBeGreaterThan(20);
  for (const span of spans) {
    for (const [key, value] of [...Object.entries(span.attributes), ...Object.entries(span.resource)]) {
      const text = JSON.stringify(value);
      for (const s of secrets)
        expect(text.includes(s), `${span.name} ${key} holds a secret (${s.slice(0, 6)}…)`).toBe(false);
    }
  }
  // And nothing anywhere in what was exported (span names, events, the resource…).
  const exported = svc.receiver.bodies().join("\n");
  for (const s of secrets) expect(exported.includes(s), `a secret (${s.slice(0, 6)}…) was exported`).toBe(false);
});

test("the OpenTelemetry SDK is loaded when tracing is on, and not at all when it is off", async () => {
  expect(svc.process.otelModules().some((m) => m.includes("/@opentelemetry/sdk-node/"))).toBe(true);
  expect(svc.process.otelModules().some((m) => m.includes("/@opentelemetry/sdk-trace/"))).toBe(true);

  const off = await startProcess({
    REDIS_URL: redisUrl(),
    REDIS_KEY_PREFIX: svc.prefix,
    JWT_SECRET: svc.world.jwtSecret,
  });
  try {
    const body = { uid: "u-untraced", passphrase: svc.world.hostA, mute: true };
    const tp = newTraceparent();
    const answer = await postJson(off.main, ROUTES.mute, body, {
      token: await svc.token(),
      headers: { traceparent: tp.header },
    });
    expect(answer.status).toBe(200);
    // prom-client requires the OpenTelemetry API facade (for exemplars) whatever boardline does; nothing else is loaded.
    const loaded = off.otelModules();
    expect(loaded.filter((m) => !m.includes("/node_modules/@opentelemetry/api/"))).toEqual([]);
    expect(svc.receiver.spans().some((s) => s.traceId === tp.traceId)).toBe(false);
  } finally {
    off.stop();
  }
});

test("a collector that is away fails nothing: calls are answered, and the shutdown still exits 0", async () => {
  const gone = net.createServer().listen(0, "127.0.0.1");
  await once(gone, "listening");
  const { port } = gone.address() as net.AddressInfo;
  gone.close();
  const env = { REDIS_URL: redisUrl(), REDIS_KEY_PREFIX: svc.prefix, JWT_SECRET: svc.world.jwtSecret };
  const proc = await startProcess({ ...env, OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}` });
  try {
    let out = "";
    proc.main.proc.stdout?.on("data", (d) => {
      out += String(d);
    });
    const body = { uid: "u-no-collector", passphrase: svc.world.hostA, mute: true };
    expect((await postJson(proc.main, ROUTES.mute, body, { token: await svc.token() })).status).toBe(200);
    const exited = once(proc.main.proc, "exit");
    proc.main.proc.kill("SIGTERM");
    const [code] = await exited;
    expect(code).toBe(0);
    expect(out).toMatch(/traces not (all )?exported at shutdown/);
  } finally {
    proc.stop();
  }
});
