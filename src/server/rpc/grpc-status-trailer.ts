/**
 * Fixes the gRPC status trailer on its way out, in two ways:
 *
 * 1. `grpc-message` percent-encoding. connect-es encodes it with
 *    encodeURIComponent, which also escapes `,`, `:`, `/` and friends; the
 *    gRPC spec (PROTOCOL-HTTP2.md) escapes only bytes outside 0x20–0x7E and
 *    `%` itself, and @grpc/grpc-js decodes with decodeURI, so a grpc-js client
 *    would read `%2C` for a comma. Re-encoding per the spec is understood by
 *    every client (decodeURIComponent and decodeURI both undo it).
 * 2. connect-es's own answers to a bad request body: a message that is not
 *    valid protobuf (INTERNAL "parse binary: …"), one that does not
 *    decompress (INTERNAL "decompression failed", or a compressed flag with
 *    no encoding) and one over the size limit (RESOURCE_EXHAUSTED "message
 *    size … is larger than configured readMaxBytes …"). The contract says
 *    INVALID_ARGUMENT with the 611 message for all of them, so they are
 *    rewritten through the error table (connect-internals.ts states what
 *    connect-es says).
 *
 * gRPC-Web carries the same trailer in the last frame of the body, and the
 * Connect protocol carries the error as a JSON body: the same two rewrites
 * apply there (`normalizeGrpcWebAtEnd`, `normalizeConnectError`).
 *
 * Each also reports the call's final gRPC status (0 for OK) to `onStatus`, so
 * the router can count calls that connect-es answered without our pipeline.
 *
 * The gRPC fast path has no connect-es trailer to fix: it writes the status
 * fields of a failure as `grpcErrorStatus` encodes them, once.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { Failure } from "../../services/failure.js";
import {
  codeToHttpStatus,
  createAsyncIterable,
  encodeEnvelope,
  errorFromJsonBytes,
  errorToJsonBytes,
  isOversizeMessageError,
  isUndecompressableMessageError,
  isUndecodableMessageError,
  readAllBytes,
  trailerFlag,
  trailerParse,
  trailerSerialize,
  type UniversalServerResponse,
} from "./connect-internals.js";
import { toBinary } from "@bufbuild/protobuf";
import { base64Encode, BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { ErrorInfoSchema } from "../../../gen/google/rpc/error_details_pb.js";
import { errorInfoOf, publicError, toConnectError } from "../call/error-table.js";

/** The error table's failure for one of connect-es's bad-request-body errors, or undefined. */
function tableFailureFor(code: Code, message: string): Failure | undefined {
  if (isUndecodableMessageError(code, message)) {
    return new Failure("invalid", { detail: "the request message is not valid protobuf" });
  }
  if (isUndecompressableMessageError(code, message)) {
    return new Failure("invalid", { detail: "the request message could not be decompressed" });
  }
  if (isOversizeMessageError(code, message)) {
    return new Failure("invalid", { detail: "the request message is over the size limit" });
  }
  return undefined;
}

const HEX = "0123456789ABCDEF";

/** Percent-encodes a status message as the gRPC over HTTP/2 spec says. */
export function encodeGrpcMessage(message: string): string {
  let plain = true;
  for (let i = 0; i < message.length; i++) {
    const c = message.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x25) {
      plain = false;
      break;
    }
  }
  if (plain) return message;
  let out = "";
  for (const b of Buffer.from(message, "utf8")) {
    out += b >= 0x20 && b <= 0x7e && b !== 0x25 ? String.fromCharCode(b) : `%${HEX[b >> 4]}${HEX[b & 15]}`;
  }
  return out;
}

/** A failure's gRPC status, as trailers or as a trailers-only response's headers. */
export interface GrpcErrorStatus {
  readonly "grpc-message": string;
  readonly "grpc-status": string;
  readonly "grpc-status-details-bin": string;
}

/**
 * The error table's answer to a failure in the three gRPC status fields, each
 * encoded once: the message percent-encoded per the spec, and the
 * `google.rpc.Status` with its `ErrorInfo` detail serialized straight from the
 * table's row. The bytes are those connect-es's `setTrailerStatus` writes for
 * `toConnectError(e)` (test/server/rpc/grpc-status-trailer.test.ts compares
 * them), without its `ConnectError`, its copy of the detail and its
 * encodeURIComponent that would have to be undone.
 */
export function grpcErrorStatus(e: unknown): GrpcErrorStatus {
  const p = publicError(e);
  // google.rpc.Status: code = 1, message = 2, details = 3 (an Any: type_url = 1, value = 2).
  const status = new BinaryWriter()
    .tag(1, WireType.Varint)
    .int32(p.grpc)
    .tag(2, WireType.LengthDelimited)
    .string(p.message)
    .tag(3, WireType.LengthDelimited)
    .fork()
    .tag(1, WireType.LengthDelimited)
    .string(`type.googleapis.com/${ErrorInfoSchema.typeName}`)
    .tag(2, WireType.LengthDelimited)
    .bytes(toBinary(ErrorInfoSchema, errorInfoOf(p)))
    .join()
    .finish();
  return {
    "grpc-message": encodeGrpcMessage(p.message),
    "grpc-status": String(p.grpc),
    "grpc-status-details-bin": base64Encode(status, "std_raw"),
  };
}

/** Rewrites the trailer in place; call once the response body has been fully produced. */
function normalizeGrpcTrailer(trailer: Headers): void {
  const status = trailer.get("grpc-status");
  const raw = trailer.get("grpc-message");
  if (status === null || status === "0" || raw === null) return;
  let message: string;
  try {
    message = decodeURIComponent(raw);
  } catch {
    message = raw;
  }
  const failure = tableFailureFor(Number(status) as Code, message);
  if (failure === undefined) {
    trailer.set("grpc-message", encodeGrpcMessage(message));
    return;
  }
  for (const [name, value] of Object.entries(grpcErrorStatus(failure))) trailer.set(name, value);
}

/** The final status a call was answered with: a gRPC status code, 0 for OK. */
export type StatusListener = (status: number) => void;

function statusOf(trailer: Headers): number {
  const status = Number(trailer.get("grpc-status") ?? Code.Unknown);
  return Number.isInteger(status) ? status : Code.Unknown;
}

/** Wraps a gRPC response body so the trailer is normalized when the body ends. */
export async function* normalizeAtEnd(
  body: AsyncIterable<Uint8Array>,
  trailer: Headers,
  onStatus: StatusListener,
): AsyncIterable<Uint8Array> {
  yield* body;
  normalizeGrpcTrailer(trailer);
  onStatus(statusOf(trailer));
}

/**
 * Wraps a gRPC-Web response body: its trailer frame (the last envelope, not
 * compressed — connect-es sends it as one chunk) is normalized like a gRPC
 * trailer. Other chunks pass through untouched.
 */
export async function* normalizeGrpcWebAtEnd(
  body: AsyncIterable<Uint8Array>,
  onStatus: StatusListener,
): AsyncIterable<Uint8Array> {
  for await (const chunk of body) {
    if (chunk.byteLength >= 5 && chunk[0] === trailerFlag) {
      const length = new DataView(chunk.buffer, chunk.byteOffset + 1, 4).getUint32(0);
      if (length === chunk.byteLength - 5) {
        const trailer = trailerParse(chunk.subarray(5));
        normalizeGrpcTrailer(trailer);
        onStatus(statusOf(trailer));
        yield encodeEnvelope(trailerFlag, trailerSerialize(trailer));
        continue;
      }
    }
    yield chunk;
  }
}

/**
 * A Connect-protocol unary error for a bad request body from connect-es
 * (HTTP 500 `internal` "parse binary: …", HTTP 429 `resource_exhausted` over
 * the size limit) becomes the error table's 400 `invalid_argument` with the
 * 611 message. Any other response is returned as it is.
 */
export async function normalizeConnectError(
  res: UniversalServerResponse,
  onStatus: StatusListener,
): Promise<UniversalServerResponse> {
  if (res.status === 200) {
    onStatus(0);
    return res;
  }
  if (
    res.body === undefined ||
    res.header?.get("content-encoding") != null ||
    !/^application\/json/.test(res.header?.get("content-type") ?? "")
  ) {
    onStatus(Code.Unknown);
    return res;
  }
  // An error body is a few hundred bytes, and connect-es has it in memory already.
  const bytes = await readAllBytes(res.body, 64 * 1024);
  const parsed = errorFromJsonBytes(bytes, undefined, new ConnectError("unreadable error", Code.Internal));
  const failure = tableFailureFor(parsed.code, parsed.rawMessage);
  const err = failure === undefined ? undefined : toConnectError(failure);
  onStatus((err ?? parsed).code);
  if (err === undefined) return { ...res, body: createAsyncIterable([bytes]) };
  const body = errorToJsonBytes(err, {});
  const header = new Headers(res.header);
  header.set("content-length", String(body.byteLength));
  return { ...res, status: codeToHttpStatus(err.code), header, body: createAsyncIterable([body]) };
}
