/**
 * connect-es clients over every protocol of the one port (Connect on HTTP/1.1
 * and HTTP/2, binary and JSON; gRPC-Web; gRPC): every error case arrives as a
 * ConnectError with the right code, `rawMessage` equal to the JSON route's
 * `error.message`, and a google.rpc.ErrorInfo detail whose metadata carries
 * the numeric code. Plus the Connect protocol's own HTTP mapping, read raw.
 */
import type { JsonValue } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { type ErrorCase, errorCases, GRPC, jsonMessage } from "./helpers/cases.js";
import { parseBody, postJson } from "../harness/http.js";
import { ROUTES, RPC_PATHS } from "../harness/routes.js";
import { expectError, expectNoLeak, INVALID_PREFIX } from "./helpers/contract.js";
import { bearer, clients, convertRequest, muteRequest, PROTOCOLS, transport } from "./helpers/rpc.js";
import { errorFromJson, trailerParse } from "../../src/server/rpc/connect-internals.js";

const TIMEOUT_MS = 250;

let bl: Boardline;
let cases: ErrorCase[];
/** The JSON route's message of each case (computed once). */
const expected = new Map<string, string>();
beforeAll(async () => {
  bl = await startBoardline({ conversionTimeoutMs: TIMEOUT_MS });
  cases = await errorCases(bl);
  for (const k of cases) expected.set(k.name, await jsonMessage(bl, k));
});
afterAll(async () => {
  await bl?.close();
});

/** connect-es's Code and the gRPC status numbers are the same. */
test("the Code numbers are the gRPC ones", () => {
  expect(Code.InvalidArgument).toBe(GRPC.INVALID_ARGUMENT);
  expect(Code.DeadlineExceeded).toBe(GRPC.DEADLINE_EXCEEDED);
  expect(Code.NotFound).toBe(GRPC.NOT_FOUND);
  expect(Code.PermissionDenied).toBe(GRPC.PERMISSION_DENIED);
  expect(Code.Internal).toBe(GRPC.INTERNAL);
  expect(Code.Unavailable).toBe(GRPC.UNAVAILABLE);
  expect(Code.Unauthenticated).toBe(GRPC.UNAUTHENTICATED);
});

describe.each(PROTOCOLS)("%s", (protocol) => {
  test("every error case: code, rawMessage, ErrorInfo", async () => {
    const { pstn, whiteboard } = clients(transport(bl, protocol));
    for (const k of cases) {
      const headers = bearer(k.authorization);
      let caught: unknown;
      try {
        if (k.op === "mute") await pstn.mute(muteRequest(k.body), { headers });
        else await whiteboard.convertFile(convertRequest(k.body), { headers });
      } catch (e) {
        caught = e;
      } finally {
      }
      expect(caught, k.name).toBeInstanceOf(ConnectError);
      const err = caught as ConnectError;
      expect({ name: k.name, code: Code[err.code] }).toEqual({ name: k.name, code: Code[k.grpc] });
      expect({ name: k.name, rawMessage: err.rawMessage }).toEqual({ name: k.name, rawMessage: expected.get(k.name) });
      const infos = err.findDetails(ErrorInfoSchema);
      expect(infos, k.name).toHaveLength(1);
      expect(infos[0]?.metadata["code"], k.name).toBe(String(k.code));
      expect(infos[0]?.domain).toBe("boardline");
    }
  });
});

describe("the Connect protocol on the wire", () => {
  const HTTP_OF: Record<number, [number, string]> = {
    [GRPC.INVALID_ARGUMENT]: [400, "invalid_argument"],
    [GRPC.UNAUTHENTICATED]: [401, "unauthenticated"],
    [GRPC.PERMISSION_DENIED]: [403, "permission_denied"],
    [GRPC.NOT_FOUND]: [404, "not_found"],
    [GRPC.UNAVAILABLE]: [503, "unavailable"],
    [GRPC.DEADLINE_EXCEEDED]: [504, "deadline_exceeded"],
    [GRPC.INTERNAL]: [500, "internal"],
  };

  test("every error case: HTTP status, code name and message of the Connect JSON error", async () => {
    for (const k of cases) {
      const res = await postJson(bl, RPC_PATHS[k.op], k.body, {
        ...(k.authorization === undefined ? { token: null } : { authorization: k.authorization }),
        headers: { "connect-protocol-version": "1" },
      });
      const [status, codeName] = HTTP_OF[k.grpc] as [number, string];
      const body = parseBody<{ code: string; message: string; details?: unknown[] }>(res);
      expect({ name: k.name, status: res.status, code: body.code, message: body.message }).toEqual({
        name: k.name,
        status,
        code: codeName,
        message: expected.get(k.name),
      });
      expect(body.details, k.name).toHaveLength(1);
      expectNoLeak(JSON.stringify(body));
    }
  });
});

/**
 * Bodies connect-es itself fails to decode, before the pipeline sees them.
 * Regression: they came back as connect-es's own text ("cannot decode field
 * channel.v1.MuteRequest.uid from JSON: …", "parse binary: …" as INTERNAL/500)
 * instead of the 611 message with an ErrorInfo.
 */
describe("request bodies connect-es cannot decode", () => {
  async function raw(path: string, contentType: string, body: string | Uint8Array, auth = true) {
    const res = await fetch(`${bl.url}${path}`, {
      method: "POST",
      headers: {
        "content-type": contentType,
        "connect-protocol-version": "1",
        ...(auth ? { authorization: `Bearer ${await bl.token()}` } : {}),
      },
      body,
    });
    return { status: res.status, headers: res.headers, bytes: new Uint8Array(await res.arrayBuffer()) };
  }

  function expectConnectError(
    r: { status: number; bytes: Uint8Array },
    status: number,
    code: string,
    message: string,
    numeric: number,
  ) {
    const body = JSON.parse(new TextDecoder().decode(r.bytes)) as {
      code: string;
      message: string;
      details?: { type: string; value: string }[];
    };
    expect({ status: r.status, code: body.code, message: body.message }).toEqual({ status, code, message });
    const err = errorFromJson(body as unknown as JsonValue, undefined, new ConnectError("unreadable"));
    expect(err.findDetails(ErrorInfoSchema)[0]?.metadata["code"]).toBe(String(numeric));
  }

  test.each<[string, "mute" | "convert", string]>([
    ["not JSON", "mute", '{"uid": '],
    ["a JSON array", "mute", "[]"],
    ["JSON null", "convert", "null"],
    ["a JSON number", "convert", "42"],
    ["uid a number", "mute", '{"uid": 5, "passphrase": "p", "mute": true}'],
    ["mute a string", "mute", '{"uid": "u", "passphrase": "p", "mute": "yes"}'],
    [
      "conversion_scale a word",
      "convert",
      '{"resource_url": "https://a.example/b.pdf", "passphrase": "p", "conversion_type": "static", "conversion_scale": "big"}',
    ],
  ])("Connect JSON, %s: the JSON route's 611 message", async (_name, op, text) => {
    const json = await postJson(bl, ROUTES[op], text);
    const message = expectError(json, 400, 611);
    expectConnectError(await raw(RPC_PATHS[op], "application/json", text), 400, "invalid_argument", message, 611);
  });

  test("Connect JSON, invalid UTF-8: the JSON route's 611 message", async () => {
    const bytes = new Uint8Array([0x7b, 0x22, 0x75, 0x69, 0x64, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]);
    const message = expectError(await postJson(bl, ROUTES.mute, bytes), 400, 611);
    expectConnectError(await raw(RPC_PATHS.mute, "application/json", bytes), 400, "invalid_argument", message, 611);
  });

  test("Connect JSON without a token and with a bad body: 401 first", async () => {
    const r = await raw(RPC_PATHS.mute, "application/json", "[]", false);
    const json = await postJson(bl, ROUTES.mute, "[]", { token: null });
    expectConnectError(r, 401, "unauthenticated", expectError(json, 401, 401), 401);
  });

  test.each(["mute", "convert"] as const)(
    "Connect binary, not protobuf (%s): 400 invalid_argument with the 611 message",
    async (op) => {
      const r = await raw(RPC_PATHS[op], "application/proto", new Uint8Array([0x0f, 0x01]));
      expectConnectError(
        r,
        400,
        "invalid_argument",
        `${INVALID_PREFIX}: the request message is not valid protobuf`,
        611,
      );
    },
  );

  test.each(["mute", "convert"] as const)(
    "gRPC-Web, not protobuf (%s): INVALID_ARGUMENT with the 611 message",
    async (op) => {
      const frame = new Uint8Array([0, 0, 0, 0, 2, 0x0f, 0x01]);
      const r = await raw(RPC_PATHS[op], "application/grpc-web+proto", frame);
      expect(r.status).toBe(200);
      const trailer = grpcWebTrailer(r.bytes);
      expect(trailer.get("grpc-status")).toBe(String(GRPC.INVALID_ARGUMENT));
      expect(decodeURIComponent(trailer.get("grpc-message") ?? "")).toBe(
        `${INVALID_PREFIX}: the request message is not valid protobuf`,
      );
      expect(trailer.get("grpc-status-details-bin")).not.toBeNull();
    },
  );

  test("gRPC-Web JSON, wrong type: the JSON route's 611 message", async () => {
    const text = '{"uid": 5, "passphrase": "p", "mute": true}';
    const message = expectError(await postJson(bl, ROUTES.mute, text), 400, 611);
    const data = new TextEncoder().encode(text);
    const frame = new Uint8Array([0, 0, 0, 0, data.length, ...data]);
    const r = await raw(RPC_PATHS.mute, "application/grpc-web+json", frame);
    const trailer = grpcWebTrailer(r.bytes);
    expect(trailer.get("grpc-status")).toBe(String(GRPC.INVALID_ARGUMENT));
    expect(decodeURIComponent(trailer.get("grpc-message") ?? "")).toBe(message);
  });
});

/** The trailer frame of a gRPC-Web response body (the last envelope, flag 0x80). */
function grpcWebTrailer(bytes: Uint8Array): Headers {
  let at = 0;
  let trailer: Headers | undefined;
  while (at + 5 <= bytes.length) {
    const flags = bytes[at] as number;
    const len = new DataView(bytes.buffer, bytes.byteOffset + at + 1, 4).getUint32(0);
    const data = bytes.subarray(at + 5, at + 5 + len);
    if ((flags & 0x80) === 0x80) trailer = trailerParse(data);
    at += 5 + len;
  }
  expect(at).toBe(bytes.length);
  if (trailer === undefined) throw new Error("no trailer frame");
  return trailer;
}
