/**
 * One test per assumption src/server/rpc/connect-internals.ts makes about
 * connect-es internals, so an upgrade that breaks one fails here by name.
 */
import http from "node:http";
import { gzipSync } from "node:zlib";
import type { AddressInfo } from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { compressionGzip, connectNodeAdapter } from "@connectrpc/connect-node";
import { afterEach, describe, expect, it } from "vitest";
import { MuteRequestSchema, PstnService } from "../../../gen/channel/v1/pstn_pb.js";
import { ErrorInfoSchema } from "../../../gen/google/rpc/error_details_pb.js";
import {
  codeToHttpStatus,
  createAsyncIterable,
  encodeEnvelope,
  errorFromJson,
  errorFromJsonBytes,
  errorToJsonBytes,
  isOversizeMessageError,
  isUndecodableMessageError,
  isUndecompressableMessageError,
  readAllBytes,
  setTrailerStatus,
  trailerFlag,
  trailerParse,
  trailerSerialize,
  withJsonBodyCheck,
} from "../../../src/server/rpc/connect-internals.js";

let server: http.Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

/** A real connect-node server on port 0 serving `routes`; resolves its base URL. */
async function serve(routes: (router: ConnectRouter) => void, readMaxBytes = 1024): Promise<string> {
  const s = http.createServer(connectNodeAdapter({ routes, readMaxBytes, acceptCompression: [compressionGzip] }));
  server = s;
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
}

const echoMute = (router: ConnectRouter) =>
  router.service(PstnService, { mute: (req) => ({ uid: req.uid, mute: req.mute ?? false }) });

async function connectError(res: Response): Promise<{ code: string; message: string }> {
  return (await res.json()) as { code: string; message: string };
}

describe("connect-es internals boardline relies on", () => {
  it("1a: setTrailerStatus writes grpc-status, a URI-encoded grpc-message and the status details", () => {
    const detail = { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason: "R", domain: "d" }) };
    const trailer = setTrailerStatus(new Headers(), new ConnectError("a, b: c", Code.InvalidArgument, {}, [detail]));
    expect(trailer.get("grpc-status")).toBe(String(Code.InvalidArgument));
    expect(trailer.get("grpc-message")).toBe(encodeURIComponent("a, b: c"));
    expect(trailer.get("grpc-status-details-bin")).not.toBeNull();
  });

  it("1c: a gRPC-Web trailer frame is flag 0x80 + length + what trailerSerialize writes", () => {
    expect(trailerFlag).toBe(0x80);
    const frame = encodeEnvelope(
      trailerFlag,
      trailerSerialize(new Headers({ "grpc-status": "3", "grpc-message": "x" })),
    );
    expect(frame[0]).toBe(0x80);
    expect(new DataView(frame.buffer, frame.byteOffset + 1, 4).getUint32(0)).toBe(frame.byteLength - 5);
    const parsed = trailerParse(frame.subarray(5));
    expect([parsed.get("grpc-status"), parsed.get("grpc-message")]).toEqual(["3", "x"]);
  });

  it("1d: createAsyncIterable yields its items and readAllBytes joins them", async () => {
    const bytes = await readAllBytes(createAsyncIterable([new Uint8Array([1, 2]), new Uint8Array([3])]), 10);
    expect([...bytes]).toEqual([1, 2, 3]);
  });

  it("2: a Connect error body round-trips and InvalidArgument is HTTP 400", () => {
    const body = errorToJsonBytes(new ConnectError("bad", Code.InvalidArgument), {});
    const back = errorFromJsonBytes(body, undefined, new ConnectError("fallback", Code.Internal));
    expect([back.code, back.rawMessage]).toEqual([Code.InvalidArgument, "bad"]);
    const fromJson = errorFromJson({ code: "not_found", message: "gone" }, undefined, new ConnectError("x"));
    expect([fromJson.code, fromJson.rawMessage]).toEqual([Code.NotFound, "gone"]);
    expect(codeToHttpStatus(Code.InvalidArgument)).toBe(400);
    expect(codeToHttpStatus(Code.ResourceExhausted)).toBe(429);
  });

  it("3: a request message that is not protobuf is INTERNAL 'parse binary…'", async () => {
    const base = await serve(echoMute);
    const res = await fetch(`${base}/channel.v1.PstnService/Mute`, {
      method: "POST",
      headers: { "content-type": "application/proto" },
      body: new Uint8Array([0x0a, 0xff, 0xff, 0xff]),
    });
    const err = await connectError(res);
    expect(err.code).toBe("internal");
    expect(isUndecodableMessageError(Code.Internal, err.message)).toBe(true);
  });

  it("4: a request message over readMaxBytes is RESOURCE_EXHAUSTED naming readMaxBytes", async () => {
    const base = await serve(echoMute, 16);
    const big = toBinary(MuteRequestSchema, create(MuteRequestSchema, { uid: "u".repeat(64), passphrase: "p" }));
    const res = await fetch(`${base}/channel.v1.PstnService/Mute`, {
      method: "POST",
      headers: { "content-type": "application/proto" },
      body: big,
    });
    const err = await connectError(res);
    expect(err.code).toBe("resource_exhausted");
    expect(isOversizeMessageError(Code.ResourceExhausted, err.message)).toBe(true);
  });

  it("5: a method's jsonOptions.textDecoder sees every JSON body first, and its ConnectError reaches the client", async () => {
    const seen: string[] = [];
    const base = await serve((router) =>
      router.rpc(PstnService.method.mute, (req) => ({ uid: req.uid, mute: req.mute ?? false }), {
        jsonOptions: withJsonBodyCheck(
          {},
          (bytes) => {
            const text = new TextDecoder().decode(bytes);
            seen.push(text);
            if (text.includes("refuse")) throw new ConnectError("refused by the check", Code.InvalidArgument);
          },
          (bytes) => new TextDecoder().decode(bytes),
        ),
      }),
    );
    const post = (body: string) =>
      fetch(`${base}/channel.v1.PstnService/Mute`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
    const ok = await post('{"uid":"u1","mute":true}');
    expect(await ok.json()).toEqual({ uid: "u1", mute: true });
    const refused = await connectError(await post('{"uid":"refuse"}'));
    expect(refused).toEqual({ code: "invalid_argument", message: "refused by the check" });
    expect(seen).toEqual(['{"uid":"u1","mute":true}', '{"uid":"refuse"}']);
  });

  it("6: a message that does not decompress, or is flagged compressed with no encoding, is 'decompression failed' / 'received compressed envelope…'", async () => {
    const base = await serve(echoMute);
    const message = toBinary(MuteRequestSchema, create(MuteRequestSchema, { uid: "u", passphrase: "p", mute: true }));
    const gz = gzipSync(message);
    const truncated = await fetch(`${base}/channel.v1.PstnService/Mute`, {
      method: "POST",
      headers: { "content-type": "application/proto", "content-encoding": "gzip" },
      body: gz.subarray(0, gz.length - 6),
    });
    const err = await connectError(truncated);
    expect(isUndecompressableMessageError(Code.Internal, err.message)).toBe(true);
    expect(err.code).toBe("internal");

    const flagged = Buffer.concat([Buffer.from([1, 0, 0, 0, message.length]), message]);
    const web = await fetch(`${base}/channel.v1.PstnService/Mute`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto" },
      body: flagged,
    });
    const body = new Uint8Array(await web.arrayBuffer());
    const trailer = trailerParse(body.subarray(5));
    expect(trailer.get("grpc-status")).toBe(String(Code.Internal));
    const text = decodeURIComponent(trailer.get("grpc-message") ?? "");
    expect(isUndecompressableMessageError(Code.Internal, text)).toBe(true);
  });
});
