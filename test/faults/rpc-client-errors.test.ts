/**
 * Client mistakes on the RPC protocols map through the error table on every
 * protocol — never INTERNAL, which means only our own bug — and a deadline is
 * DEADLINE_EXCEEDED wherever it runs out. Found by an outside fuzz run: a
 * truncated gzip message, a compressed flag with no encoding, a deadline
 * passing during a backend call (CancelConversion's: ConvertFile only queues,
 * and asks the backend later), and a deadline too long for a timer all
 * answered INTERNAL (or were refused) on some protocols.
 */
import http2 from "node:http2";
import { gzipSync } from "node:zlib";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { MuteRequestSchema } from "../../gen/channel/v1/pstn_pb.js";
import { CancelConversionRequestSchema } from "../../gen/whiteboard/v1/whiteboard_pb.js";
import { INVALID_REQUEST_MESSAGE } from "../../src/server/call/error-table.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { capturingLogger } from "../harness/capturing-logger.js";
import { eventually } from "../harness/eventually.js";
import { postJson } from "../harness/http.js";
import { ROUTES, RPC_PATHS } from "../harness/routes.js";

const MUTE = RPC_PATHS.mute;
const CANCEL = "/whiteboard.v1.WhiteboardService/CancelConversion";

let bl: Boardline;
let token: string;
const log = capturingLogger();
beforeAll(async () => {
  // Projector API (its tasks can be cancelled) and no polls: a submitted task stays Waiting, so a cancel asks the backend.
  bl = await startBoardline({
    store: "memory",
    conversionTimeoutMs: 10_000,
    conversionApi: "projector",
    follow: { firstPollMs: 600_000 },
    logger: log.logger,
  });
  token = await bl.token();
});
afterAll(async () => {
  await bl.close();
});

const muteBytes = () =>
  toBinary(
    MuteRequestSchema,
    create(MuteRequestSchema, { uid: "u-1", passphrase: bl.world.hostPassphrase, mute: true }),
  );
const frame = (flag: number, payload: Uint8Array) => {
  const head = Buffer.alloc(5);
  head[0] = flag;
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
};
const truncatedGzip = () => {
  const gz = gzipSync(muteBytes());
  return gz.subarray(0, gz.length - 6);
};

/** A gRPC call over h2c: the grpc-status and grpc-message it ends with. */
async function grpc(path: string, headers: Record<string, string>, body: Buffer) {
  const session = http2.connect(bl.url);
  try {
    return await new Promise<{ status: number; message: string }>((resolve, reject) => {
      const stream = session.request({
        ":method": "POST",
        ":path": path,
        authorization: `Bearer ${token}`,
        ...headers,
      });
      let status = Number.NaN;
      let message = "";
      const read = (h: http2.IncomingHttpHeaders) => {
        if (h["grpc-status"] !== undefined) status = Number(h["grpc-status"]);
        if (typeof h["grpc-message"] === "string") message = decodeURIComponent(h["grpc-message"]);
      };
      stream.on("response", read);
      stream.on("trailers", read);
      stream.on("data", () => {});
      stream.on("end", () => resolve({ status, message }));
      stream.on("error", reject);
      stream.end(body);
    });
  } finally {
    session.close();
  }
}

/** A gRPC-Web call over HTTP/1.1: the status in its trailer frame. */
async function grpcWeb(path: string, headers: Record<string, string>, body: Buffer) {
  const res = await fetch(`${bl.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/grpc-web+proto", authorization: `Bearer ${token}`, ...headers },
    body,
  });
  const bytes = Buffer.from(await res.arrayBuffer());
  let at = 0;
  while (at + 5 <= bytes.length) {
    const len = bytes.readUInt32BE(at + 1);
    if (bytes[at] === 0x80) {
      const fields = Object.fromEntries(
        bytes
          .subarray(at + 5, at + 5 + len)
          .toString("latin1")
          .split("\r\n")
          .filter((l) => l !== "")
          .map((l) => [l.slice(0, l.indexOf(":")).trim().toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]),
      );
      return { status: Number(fields["grpc-status"]), message: decodeURIComponent(fields["grpc-message"] ?? "") };
    }
    at += 5 + len;
  }
  return {
    status: Number(res.headers.get("grpc-status")),
    message: decodeURIComponent(res.headers.get("grpc-message") ?? ""),
  };
}

/** A Connect unary call over HTTP/1.1: HTTP status and error body. */
async function connect(path: string, headers: Record<string, string>, body: string | Uint8Array) {
  const res = await fetch(`${bl.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, ...headers },
    body,
  });
  return { http: res.status, body: (await res.json()) as { code?: string; message?: string; uid?: string } };
}

const invalid = (detail: string) => `${INVALID_REQUEST_MESSAGE}: ${detail}`;

describe("undecodable compressed messages are INVALID_ARGUMENT with the 611 message", () => {
  test("truncated gzip, gRPC (grpc-encoding: gzip)", async () => {
    const r = await grpc(
      MUTE,
      { "content-type": "application/grpc", "grpc-encoding": "gzip" },
      frame(1, truncatedGzip()),
    );
    expect(r).toEqual({
      status: Code.InvalidArgument,
      message: invalid("the request message could not be decompressed"),
    });
  });

  test("truncated gzip, gRPC-Web", async () => {
    const r = await grpcWeb(MUTE, { "grpc-encoding": "gzip" }, frame(1, truncatedGzip()));
    expect(r).toEqual({
      status: Code.InvalidArgument,
      message: invalid("the request message could not be decompressed"),
    });
  });

  test("truncated gzip, Connect (Content-Encoding: gzip)", async () => {
    const r = await connect(
      MUTE,
      { "content-type": "application/proto", "content-encoding": "gzip" },
      new Uint8Array(truncatedGzip()),
    );
    expect(r).toEqual({
      http: 400,
      body: {
        code: "invalid_argument",
        message: invalid("the request message could not be decompressed"),
        details: expect.anything(),
      },
    });
  });

  test("compressed flag with no grpc-encoding, application/grpc+json", async () => {
    const json = Buffer.from(JSON.stringify({ uid: "u", passphrase: bl.world.hostPassphrase, mute: true }));
    const r = await grpc(MUTE, { "content-type": "application/grpc+json" }, frame(1, json));
    expect(r.status).toBe(Code.InvalidArgument);
    expect(r.message).toBe(invalid("the request message could not be decompressed"));
  });

  test("compressed flag with no grpc-encoding, gRPC-Web", async () => {
    const r = await grpcWeb(MUTE, {}, frame(1, muteBytes()));
    expect(r).toEqual({
      status: Code.InvalidArgument,
      message: invalid("the request message could not be decompressed"),
    });
  });
});

describe("a CancelConversion deadline that runs out during the backend call is DEADLINE_EXCEEDED on every protocol", () => {
  let uuid = "";
  beforeAll(async () => {
    const res = await postJson(bl, ROUTES.convert, {
      resource_url: "https://example.com/a.pdf",
      passphrase: bl.world.hostPassphrase,
      conversion_type: "static",
    });
    expect(res.status, res.text).toBe(200);
    uuid = (JSON.parse(res.text) as { task_uuid: string }).task_uuid;
    await eventually(
      async () => (await bl.store.conversions.getConversion(uuid))?.status === "Waiting",
      5_000,
      "the task to be submitted",
    );
  });
  const slow = () => bl.simulator.setFault({ kind: "slow", delayMs: 3_000, times: 1, operation: "cancel" });
  const cancelBytes = () =>
    toBinary(CancelConversionRequestSchema, create(CancelConversionRequestSchema, { taskUuid: uuid }));
  const cancelJson = () => JSON.stringify({ task_uuid: uuid });

  test("gRPC (fast path)", async () => {
    slow();
    const r = await grpc(
      CANCEL,
      { "content-type": "application/grpc", "grpc-timeout": "300m" },
      frame(0, cancelBytes()),
    );
    expect(r.status).toBe(Code.DeadlineExceeded);
  });

  test("gRPC with the JSON codec (connect-es)", async () => {
    slow();
    const r = await grpc(
      CANCEL,
      { "content-type": "application/grpc+json", "grpc-timeout": "300m" },
      frame(0, Buffer.from(cancelJson())),
    );
    expect(r.status).toBe(Code.DeadlineExceeded);
  });

  test("gRPC-Web", async () => {
    slow();
    const r = await grpcWeb(CANCEL, { "grpc-timeout": "300m" }, frame(0, cancelBytes()));
    expect(r.status).toBe(Code.DeadlineExceeded);
  });

  test("Connect", async () => {
    slow();
    const r = await connect(CANCEL, { "content-type": "application/json", "connect-timeout-ms": "300" }, cancelJson());
    expect(r.http).toBe(504);
    expect(r.body.code).toBe("deadline_exceeded");
  });
});

describe("a deadline longer than a timer can hold is no deadline", () => {
  let warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(w.name);
  beforeAll(() => {
    process.on("warning", onWarning);
  });
  afterAll(() => {
    process.off("warning", onWarning);
  });

  test("on every protocol the call runs (no refusal, no 1 ms timer, no TimeoutOverflowWarning)", async () => {
    warnings = [];
    const huge = "99999999H";
    const fast = await grpc(MUTE, { "content-type": "application/grpc", "grpc-timeout": huge }, frame(0, muteBytes()));
    expect(fast.status).toBe(0);
    const json = await grpc(
      MUTE,
      { "content-type": "application/grpc+json", "grpc-timeout": huge },
      frame(0, Buffer.from(JSON.stringify({ uid: "u-2", passphrase: bl.world.hostPassphrase, mute: true }))),
    );
    expect(json.status).toBe(0);
    expect((await grpcWeb(MUTE, { "grpc-timeout": huge }, frame(0, muteBytes()))).status).toBe(0);
    const c = await connect(
      MUTE,
      { "content-type": "application/json", "connect-timeout-ms": "9999999999" },
      JSON.stringify({ uid: "u-3", passphrase: bl.world.hostPassphrase, mute: true }),
    );
    expect(c).toEqual({ http: 200, body: { uid: "u-3", mute: true } });
    await new Promise((resolve) => setImmediate(resolve));
    expect(warnings).not.toContain("TimeoutOverflowWarning");
  });
});

test("none of these client mistakes was logged as a server error", () => {
  const errors = log.lines().filter((l) => typeof l.level === "number" && l.level >= 50);
  expect(errors.map((l) => l.msg)).toEqual([]);
});
