/**
 * Property-based bad input (fast-check) over both JSON routes and the gRPC
 * path: random and mutated bodies never get a 5xx (or INTERNAL/UNKNOWN),
 * every JSON answer is a 4xx in the documented shape, the process keeps
 * serving, and Redis is unchanged afterwards.
 */
import * as grpc from "@grpc/grpc-js";
import fc from "fast-check";
import { afterAll, beforeAll, expect, test } from "vitest";
import { INVALID_REQUEST_MESSAGE } from "../../src/server/call/error-table.js";
import { LINGER_MS } from "../../src/server/http/h1-pipelining.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { headFirst, parseResponses } from "../harness/http-clients.js";
import { postJson } from "../harness/http.js";
import { redisSnapshot } from "../harness/redis-state.js";
import { OPS, ROUTES, RPC_PATHS } from "../harness/routes.js";

let bl: Boardline;
let token: string;
let client: grpc.Client;

beforeAll(async () => {
  bl = await startBoardline({ maxBodyBytes: 64 * 1024 });
  token = await bl.token();
  client = new grpc.Client(new URL(bl.url).host, grpc.credentials.createInsecure());
});
afterAll(async () => {
  client.close();
  await bl.close();
});

/** Both JSON routes. */
const JSON_ROUTES = OPS.map((op) => ROUTES[op]);
const FIELDS = [
  "uid",
  "passphrase",
  "mute",
  "resource_url",
  "conversion_type",
  "conversion_scale",
  "resourceUrl",
  "conversionScale",
];

/** JSON-ish values, including the awkward ones. */
const wild = fc.oneof(
  fc.string(),
  fc.string({ unit: "binary" }),
  fc.double(),
  fc.integer(),
  fc.bigInt().map((b) => b * 10n ** 30n),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom("static", "dynamic", "https://example.com/a.pdf", "\u0000", "\uD800", "1e309", "-0"),
  fc.array(fc.integer(), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.integer(), { maxKeys: 3 }),
);

/** Raw request bodies: structured objects made text, and text mutations of them. */
const body: fc.Arbitrary<Uint8Array> = fc.oneof(
  fc.dictionary(fc.constantFrom(...FIELDS), wild, { maxKeys: 6 }).map((o) => enc(toJsonText(o))),
  fc.anything().map((v) => enc(safeStringify(v))),
  fc.string({ unit: "binary" }).map(enc),
  fc.uint8Array({ maxLength: 200 }),
  fc.integer({ min: 1, max: 400 }).map((depth) => enc(`${"[".repeat(depth * 10)}${"]".repeat(depth * 10)}`)),
  fc
    .tuple(fc.constantFrom(...FIELDS), wild, wild)
    .map(([k, a, b]) => enc(`{"${k}":${toJsonText(a)},"${k}":${toJsonText(b)}}`)),
  fc
    .constantFrom(
      '{"uid":NaN,"passphrase":"p","mute":true}',
      '{"conversion_scale":Infinity}',
      '{"uid":"a","passphrase":"b","mute":tru',
      '{"uid":"a\u0000b","passphrase":"b","mute":true}',
    )
    .map(enc),
  fc.constant(new Uint8Array([0x7b, 0x22, 0x75, 0x69, 0x64, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d])),
);

function enc(s: string): Uint8Array {
  return new TextEncoder().encode(s);
}
function toJsonText(v: unknown): string {
  return typeof v === "bigint" ? v.toString() : (safeStringify(v) ?? "null");
}
function safeStringify(v: unknown): string {
  try {
    return JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? Number(x) : x)) ?? "null";
  } catch {
    return "{";
  }
}

test("random JSON-route bodies: always a documented 4xx, never a 5xx", async () => {
  const before = await redisSnapshot(bl);
  const contentTypes = [
    "application/json",
    "application/json; charset=utf-8",
    "text/plain",
    "",
    "application/x-www-form-urlencoded",
  ];
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom(...JSON_ROUTES),
      body,
      fc.constantFrom(...contentTypes),
      async (route, bytes, ct) => {
        const res = await postJson(bl, route, bytes, { token, contentType: ct === "" ? null : ct });
        const text = res.text;
        expect(res.status, text).toBeGreaterThanOrEqual(400);
        expect(res.status, text).toBeLessThan(500);
        const parsed = JSON.parse(text) as { error: { code: number; message: string } };
        expect(Object.keys(parsed)).toEqual(["error"]);
        expect(Object.keys(parsed.error).sort()).toEqual(["code", "message"]);
        expect([611, 403, 404]).toContain(parsed.error.code);
      },
    ),
    { numRuns: 300 },
  );
  expect(await redisSnapshot(bl)).toEqual(before);
}, 60_000);

test("a 10 MB body: 413 with the documented error before any of it is read; the rest is dropped", async () => {
  const before = await redisSnapshot(bl);
  const big = new Uint8Array(10 * 1024 * 1024).fill(0x61);
  const expected = JSON.stringify({
    error: { code: 611, message: `${INVALID_REQUEST_MESSAGE}: body exceeds ${64 * 1024} bytes` },
  });
  for (const route of JSON_ROUTES) {
    const head = [
      `POST ${route} HTTP/1.1`,
      "host: localhost",
      `authorization: Bearer ${token}`,
      "content-type: application/json",
      `content-length: ${big.length}`,
      "",
      "",
    ].join("\r\n");
    // The declared length alone is refused: the answer and the FIN come before the body is sent.
    const outcome = await headFirst(bl.port, head, big);
    const answers = parseResponses(outcome.received);
    expect(answers, outcome.received).toHaveLength(1);
    const [answer] = answers;
    expect(answer?.status, outcome.received).toBe(413);
    expect(answer?.headers.connection).toBe("close");
    expect(answer?.headers["content-type"]).toBe("application/json");
    expect(answer?.body).toBe(expected);
    // The server has ended its side; the body sent anyway is read and dropped while the connection
    // lingers (so the 413 is not lost to a reset), or refused once the linger is over — never run.
    expect(["accepted", "EPIPE", "ECONNRESET"], route).toContain(outcome.bodyOutcome);
    expect(outcome.closedAfterMs, route).toBeLessThan(LINGER_MS + 2_000);
  }
  expect((await fetch(`${bl.url}/healthz`)).status).toBe(200);
  expect(await redisSnapshot(bl)).toEqual(before);
}, 30_000);

test("truncated bodies: 400, and the server keeps serving", async () => {
  const before = await redisSnapshot(bl);
  for (const route of JSON_ROUTES) {
    const truncated = await postJson(bl, route, '{"uid":"a","pass', { token });
    expect(truncated.status, truncated.text).toBe(400);
  }
  const health = await fetch(`${bl.url}/healthz`);
  expect(health.status).toBe(200);
  expect(await redisSnapshot(bl)).toEqual(before);
}, 30_000);

test("random gRPC request messages: never INTERNAL or UNKNOWN", async () => {
  const before = await redisSnapshot(bl);
  const methods = OPS.map((op) => RPC_PATHS[op]);
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...methods), fc.uint8Array({ maxLength: 300 }), async (path, bytes) => {
      const md = new grpc.Metadata();
      md.set("authorization", `Bearer ${token}`);
      const code = await new Promise<number>((resolve) => {
        client.makeUnaryRequest(
          path,
          (b: Uint8Array) => Buffer.from(b),
          (b: Buffer) => b,
          bytes,
          md,
          { deadline: Date.now() + 5000 },
          (err) => resolve(err?.code ?? 0),
        );
      });
      expect([grpc.status.INVALID_ARGUMENT, grpc.status.PERMISSION_DENIED, grpc.status.NOT_FOUND]).toContain(code);
    }),
    { numRuns: 200 },
  );
  expect(await redisSnapshot(bl)).toEqual(before);
}, 60_000);
