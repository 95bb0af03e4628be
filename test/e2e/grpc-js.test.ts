/**
 * @grpc/grpc-js — an implementation independent of the server's connect-es —
 * against the real server: every error case arrives with the right status, a
 * message byte-for-byte equal to the JSON route's `error.message` (the
 * `grpc-message` percent-encoding), and a `grpc-status-details-bin` that
 * decodes to a google.rpc.Status carrying a google.rpc.ErrorInfo with the
 * numeric code. ConvertFile answers before the backend is asked, so the
 * backend's rows are checked on CancelConversion, which still asks it. Also
 * both RPCs succeed, and a request that is not protobuf is INVALID_ARGUMENT
 * with the 611 message.
 */
import { create, type DescMessage, fromBinary, type MessageShape, toBinary } from "@bufbuild/protobuf";
import { anyIs, anyUnpack, type Any } from "@bufbuild/protobuf/wkt";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { MuteRequestSchema, MuteResponseSchema } from "../../gen/channel/v1/pstn_pb.js";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import {
  CancelConversionRequestSchema,
  ConversionSchema,
  ConvertFileRequestSchema,
  ConvertFileResponseSchema,
} from "../../gen/whiteboard/v1/whiteboard_pb.js";
import type { SimulatorFault } from "../../src/demo/simulator/index.js";
import { encodeGrpcMessage } from "../../src/server/rpc/grpc-status-trailer.js";
import { MissLimitGuard } from "../../src/services/passphrase-guard.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { eventually } from "../harness/eventually.js";
import { statusDetails } from "../harness/grpc-status-details.js";
import { startRedisServer } from "../harness/redis-server.js";
import { type ErrorCase, errorCases, GRPC, jsonMessage } from "./helpers/cases.js";
import { postJson } from "../harness/http.js";
import { convertBody, muteBody } from "../harness/request-bodies.js";
import { type Op, ROUTES, RPC_PATHS } from "../harness/routes.js";
import { expectError, INVALID_PREFIX } from "./helpers/contract.js";
import { convertRequest, muteRequest } from "./helpers/rpc.js";

const TIMEOUT_MS = 300;
const CANCEL_PATH = "/whiteboard.v1.WhiteboardService/CancelConversion";

let bl: Boardline;
let client: grpc.Client;
let cases: ErrorCase[];
beforeAll(async () => {
  bl = await startBoardline({ conversionTimeoutMs: TIMEOUT_MS });
  client = new grpc.Client(new URL(bl.url).host, grpc.credentials.createInsecure());
  cases = await errorCases(bl);
});
afterAll(async () => {
  client?.close();
  await bl?.close();
});

const METHODS = {
  mute: { path: RPC_PATHS.mute, input: MuteRequestSchema, output: MuteResponseSchema },
  convert: {
    path: RPC_PATHS.convert,
    input: ConvertFileRequestSchema,
    output: ConvertFileResponseSchema,
  },
} as const;

interface Outcome<T> {
  readonly error: grpc.ServiceError | undefined;
  readonly value: T | undefined;
}

/** A unary call with grpc-js's own client; `serialize` is whatever the test wants on the wire. */
function call<I, O extends DescMessage>(
  path: string,
  serialize: (input: I) => Buffer,
  output: O,
  input: I,
  authorization: string | undefined,
  on: grpc.Client = client,
): Promise<Outcome<MessageShape<O>>> {
  return callOn(on, path, serialize, output, input, authorization);
}

function callOn<I, O extends DescMessage>(
  on: grpc.Client,
  path: string,
  serialize: (input: I) => Buffer,
  output: O,
  input: I,
  authorization: string | undefined,
): Promise<Outcome<MessageShape<O>>> {
  const metadata = new grpc.Metadata();
  if (authorization !== undefined) metadata.set("authorization", authorization);
  return new Promise((resolve) => {
    on.makeUnaryRequest(
      path,
      serialize,
      (bytes: Buffer) => fromBinary(output, bytes),
      input,
      metadata,
      { deadline: Date.now() + 10_000 },
      (error: grpc.ServiceError | null, value?: MessageShape<O>) => resolve({ error: error ?? undefined, value }),
    );
  });
}

/** grpc-js's serializer for request messages of `schema`. */
function encoder<D extends DescMessage>(schema: D): (input: MessageShape<D>) => Buffer {
  return (input) => Buffer.from(toBinary(schema, input));
}

function callMute(body: Record<string, unknown>, authorization: string | undefined, on: grpc.Client = client) {
  const m = METHODS.mute;
  return call(m.path, encoder(m.input), m.output, muteRequest(body), authorization, on);
}

function callConvert(body: Record<string, unknown>, authorization: string | undefined) {
  const m = METHODS.convert;
  return call(m.path, encoder(m.input), m.output, convertRequest(body), authorization);
}

function callOp(op: Op, body: Record<string, unknown>, authorization: string | undefined): Promise<Outcome<unknown>> {
  return op === "mute" ? callMute(body, authorization) : callConvert(body, authorization);
}

/** The status details of an error: a Status with the same code and message, and an ErrorInfo with the numeric code. */
function expectStatusDetails(error: grpc.ServiceError, grpcCode: number, code: number, message: string) {
  const raw = error.metadata.get("grpc-status-details-bin");
  expect(raw).toHaveLength(1);
  const status = statusDetails(raw[0] as Buffer);
  expect(status.code).toBe(grpcCode);
  expect(status.message).toBe(message);
  const infos = status.details.filter((d) => anyIs(d, ErrorInfoSchema));
  expect(infos).toHaveLength(1);
  const info = anyUnpack(infos[0] as Any, ErrorInfoSchema);
  expect(info?.metadata["code"]).toBe(String(code));
  expect(info?.domain).toBe("boardline");
  expect(info?.reason).toMatch(/^[A-Z][A-Z0-9_]*[A-Z0-9]$/);
}

/** The rows only the conversion backend's faults reach. */
const BACKEND_ROWS: readonly number[] = [GRPC.UNAVAILABLE, GRPC.INTERNAL, GRPC.DEADLINE_EXCEEDED];

describe("error cases: the same message as the JSON route, byte for byte", () => {
  test("every case", async () => {
    // One test over the catalogue so the JSON answer and the RPC answer of a case run back to back.
    const seen = new Set<number>();
    // A backend fault never fails a ConvertFile (it is queued): its rows are CancelConversion's, below.
    for (const k of cases) {
      const expected = await jsonMessage(bl, k);
      const { error, value } = await callOp(k.op, k.body, k.authorization);
      expect(value, k.name).toBeUndefined();
      expect(error, k.name).toBeDefined();
      const e = error as grpc.ServiceError;
      expect({ name: k.name, code: e.code }).toEqual({ name: k.name, code: k.grpc });
      expect({ name: k.name, details: e.details }).toEqual({ name: k.name, details: expected });
      expectStatusDetails(e, k.grpc, k.code, expected);
      seen.add(k.grpc);
    }
    expect([...seen].sort((a, b) => a - b)).toEqual(
      Object.values(GRPC)
        .filter((code) => !BACKEND_ROWS.includes(code))
        .sort((a, b) => a - b),
    );
  });

  test("messages with ':', ',', '[', '`' and '\\' arrive intact (grpc-message percent-encoding)", async () => {
    const tricky = cases.filter((k) => k.grpc === GRPC.INVALID_ARGUMENT);
    const messages: string[] = [];
    for (const k of tricky) {
      const { error } = await callOp(k.op, k.body, k.authorization);
      messages.push((error as grpc.ServiceError).details);
    }
    const all = messages.join("\n");
    for (const ch of [":", ",", "[", "]", "`", "\\"]) expect(all).toContain(ch);
    expect(all).not.toMatch(/%[0-9A-F]{2}/);
    expect(messages).toContain(`${INVALID_PREFIX}: conversion_type: must be in list [static, dynamic]`);
  });

  test("the percent-encoding of non-ASCII text decodes with grpc-js's decodeURI", () => {
    // No server message contains non-ASCII or '%' today; this pins the encoder for when one does.
    for (const text of ["Zoë: naïve, ✓ 😀", "100% sure, 50%2C", "tab\there\nnewline", "`a\\b` [x, y]: z"]) {
      const wire = encodeGrpcMessage(text);
      expect(wire).toMatch(/^[\x20-\x7e]*$/);
      expect(decodeURI(wire)).toBe(text);
      expect(decodeURIComponent(wire)).toBe(text);
    }
    expect(encodeGrpcMessage("a: b, c")).toBe("a: b, c");
  });
});

describe("a request that is not protobuf", () => {
  test.each<[string, number[]]>([
    ["truncated length-delimited field", [0x0a, 0x05, 0x61]],
    ["invalid wire type", [0x0f, 0x01]],
    ["varint that never ends", [0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]],
    ["invalid UTF-8 in a string field", [0x0a, 0x02, 0xff, 0xfe]],
  ])("%s → INVALID_ARGUMENT with the 611 message", async (_name, bytes) => {
    const state = await bl.store.getMuteState(bl.world.project, bl.world.channel);
    for (const op of ["mute", "convert"] as const) {
      const m = METHODS[op];
      const before = bl.simulator.requests().length;
      const { error } = await call(m.path, () => Buffer.from(bytes), m.output, null, `Bearer ${await bl.token()}`);
      expect(error?.code, op).toBe(grpc.status.INVALID_ARGUMENT);
      const details = (error as grpc.ServiceError).details;
      expect(details.startsWith(INVALID_PREFIX), details).toBe(true);
      expect(details).toMatch(new RegExp(`^${INVALID_PREFIX}(: .+)?$`));
      expectStatusDetails(error as grpc.ServiceError, grpc.status.INVALID_ARGUMENT, 611, details);
      expect(bl.simulator.requests().length).toBe(before);
    }
    expect(await bl.store.getMuteState(bl.world.project, bl.world.channel)).toEqual(state);
  });
});

test("authentication comes first: no token and bytes that are not protobuf → UNAUTHENTICATED", async () => {
  // Regression: connect-es decoded the message before the pipeline authenticated, so this was INVALID_ARGUMENT.
  for (const op of ["mute", "convert"] as const) {
    const m = METHODS[op];
    const { error } = await call(m.path, () => Buffer.from([0x0f, 0x01]), m.output, null, undefined);
    expect(error?.code, op).toBe(grpc.status.UNAUTHENTICATED);
    expectStatusDetails(
      error as grpc.ServiceError,
      grpc.status.UNAUTHENTICATED,
      401,
      (error as grpc.ServiceError).details,
    );
  }
});

describe("success", () => {
  test("Mute and unmute", async () => {
    const auth = `Bearer ${await bl.token(bl.world.project, "grpc-js-host")}`;
    const muted = await callMute({ uid: "pstn-7", passphrase: bl.world.hostPassphrase, mute: true }, auth);
    expect(muted.error).toBeUndefined();
    expect(muted.value).toMatchObject({ uid: "pstn-7", mute: true });
    const unmuted = await callMute({ uid: "pstn-7", passphrase: bl.world.hostPassphrase, mute: false }, auth);
    expect(unmuted.value).toMatchObject({ uid: "pstn-7", mute: false });
    expect(await bl.store.getMuteState(bl.world.project, bl.world.channel)).toEqual({ "pstn-7": false });
    const events = await bl.store.getMuteEvents(bl.world.project, bl.world.channel);
    expect(events.map((e) => ({ uid: e.uid, mute: e.mute, by: e.by }))).toEqual([
      { uid: "pstn-7", mute: false, by: "grpc-js-host" },
      { uid: "pstn-7", mute: true, by: "grpc-js-host" },
    ]);
  });

  test("ConvertFile", async () => {
    const auth = `Bearer ${await bl.token(bl.world.project, "grpc-js-presenter")}`;
    const resource = "https://docs.example.com/grpc-js.pdf";
    const { error, value } = await callConvert(
      {
        resource_url: resource,
        passphrase: bl.world.attendeePassphrase,
        conversion_type: "static",
        conversion_scale: 0.1,
      },
      auth,
    );
    expect(error).toBeUndefined();
    expect(value).toMatchObject({ status: "Queued", reused: false, queuePosition: 1 });
    expect(value?.taskUuid).toMatch(/^[0-9a-f]{32}$/);
    const record = await bl.store.conversions.getConversion(value?.taskUuid ?? "");
    expect(record).toMatchObject({
      project: bl.world.project,
      channel: bl.world.channel,
      type: "static",
      by: "grpc-js-presenter",
    });
    // Submitted after the answer.
    const sent = () =>
      bl.simulator.requests().filter((r) => (r.body as { resource?: string } | undefined)?.resource === resource);
    await eventually(() => sent().length > 0, 5_000, "the submission");
    expect(sent().map((r) => r.body)).toEqual([{ resource, type: "static", scale: 0.1, preview: false }]);
  });
});

describe("rows that need a server of their own", () => {
  test("429 → RESOURCE_EXHAUSTED, with the JSON message and retry_after_seconds", async () => {
    const limited = await startBoardline({
      guard: (store) => new MissLimitGuard(store, { attempts: 2, windowSeconds: 30 }),
    });
    const c = new grpc.Client(new URL(limited.url).host, grpc.credentials.createInsecure());
    try {
      const token = await limited.token(limited.world.project, "guesser");
      for (let i = 0; i < 2; i++) {
        expectError(
          await postJson(limited, ROUTES.mute, muteBody(limited, { passphrase: `guess ${i}` }), { token }),
          403,
          403,
        );
      }
      const json = await postJson(limited, ROUTES.mute, muteBody(limited), { token });
      const message = expectError(json, 429, 429);
      const { error } = await callMute(muteBody(limited), `Bearer ${token}`, c);
      expect(error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      expect(error?.details).toBe(message);
      const status = statusDetails(error?.metadata.get("grpc-status-details-bin")[0] as Buffer);
      const info = anyUnpack(status.details.find((d) => anyIs(d, ErrorInfoSchema)) as Any, ErrorInfoSchema);
      expect(info?.metadata["code"]).toBe("429");
      expect(Number(info?.metadata["retry_after_seconds"])).toBeGreaterThanOrEqual(1);
      expect(Number(info?.metadata["retry_after_seconds"])).toBeLessThanOrEqual(30);
    } finally {
      c.close();
      await limited.close();
    }
  });

  test("CancelConversion, the backend failing → the JSON route's message, each backend row", async () => {
    // Projector API (its tasks can be cancelled), and no polls: the task stays Waiting, so a cancel asks the backend.
    const at = await startBoardline({
      conversionApi: "projector",
      conversionTimeoutMs: TIMEOUT_MS,
      follow: { firstPollMs: 600_000 },
    });
    const c = new grpc.Client(new URL(at.url).host, grpc.credentials.createInsecure());
    try {
      const token = await at.token();
      const accepted = await postJson(at, ROUTES.convert, convertBody(at), { token });
      const uuid = (JSON.parse(accepted.text) as { task_uuid: string }).task_uuid;
      await eventually(
        async () => (await at.store.conversions.getConversion(uuid))?.status === "Waiting",
        5_000,
        "the task to be submitted",
      );
      const rows: [SimulatorFault, number, number, number][] = [
        [{ kind: "status", status: 503 }, GRPC.UNAVAILABLE, 503, 503],
        [{ kind: "reset" }, GRPC.UNAVAILABLE, 503, 503],
        [{ kind: "status", status: 401 }, GRPC.INTERNAL, 500, 500],
        [{ kind: "garbage" }, GRPC.INTERNAL, 500, 500],
        [{ kind: "status", status: 400 }, GRPC.INVALID_ARGUMENT, 400, 611],
        // Last: a slow answer alone still cancels the task at the backend.
        [{ kind: "slow", delayMs: TIMEOUT_MS * 4 }, GRPC.DEADLINE_EXCEEDED, 504, 504],
      ];
      const seen = new Set<number>();
      for (const [fault, grpcCode, http, code] of rows) {
        const name = JSON.stringify(fault);
        at.simulator.setFault({ ...fault, times: 1, operation: "cancel" });
        const json = await postJson(at, `${ROUTES.convert}/${uuid}`, undefined, { token, method: "DELETE" });
        const message = expectError(json, http, code);
        at.simulator.setFault({ ...fault, times: 1, operation: "cancel" });
        const { error, value } = await callOn(
          c,
          CANCEL_PATH,
          encoder(CancelConversionRequestSchema),
          ConversionSchema,
          create(CancelConversionRequestSchema, { taskUuid: uuid }),
          `Bearer ${token}`,
        );
        at.simulator.clearFaults();
        expect(value, name).toBeUndefined();
        expect({ name, code: error?.code, details: error?.details }).toEqual({
          name,
          code: grpcCode,
          details: message,
        });
        expectStatusDetails(error as grpc.ServiceError, grpcCode, code, message);
        seen.add(grpcCode);
      }
      expect([...seen]).toEqual(expect.arrayContaining([...BACKEND_ROWS]));
    } finally {
      c.close();
      await at.close();
    }
  });

  test("Redis down → UNAVAILABLE, with the JSON message", async () => {
    const redis = await startRedisServer();
    const down = await startBoardline({ redisUrl: redis.url });
    const c = new grpc.Client(new URL(down.url).host, grpc.credentials.createInsecure());
    try {
      redis.kill("SIGKILL");
      const message = expectError(await postJson(down, ROUTES.mute, muteBody(down)), 503, 503);
      const { error } = await callMute(muteBody(down), `Bearer ${await down.token()}`, c);
      expect(error?.code).toBe(grpc.status.UNAVAILABLE);
      expect(error?.details).toBe(message);
      expectStatusDetails(error as grpc.ServiceError, grpc.status.UNAVAILABLE, 503, message);
    } finally {
      c.close();
      await redis.restart();
      await down.close();
      await redis.stop();
    }
  });
});
