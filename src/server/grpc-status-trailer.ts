/**
 * Fixes the gRPC status trailer on its way out, in two ways:
 *
 * 1. `grpc-message` percent-encoding. connect-es encodes it with
 *    encodeURIComponent, which also escapes `,`, `:`, `/` and friends; the
 *    gRPC spec (PROTOCOL-HTTP2.md) escapes only bytes outside 0x20–0x7E and
 *    `%` itself, and @grpc/grpc-js decodes with decodeURI, so a grpc-js client
 *    would read `%2C` for a comma. Re-encoding per the spec is understood by
 *    every client (decodeURIComponent and decodeURI both undo it).
 * 2. A request message that is not valid protobuf surfaces from connect-es as
 *    INTERNAL "parse binary: …"; the contract says INVALID_ARGUMENT with the
 *    611 message, so it is rewritten through the error table.
 */
import { ConnectError } from "@connectrpc/connect";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { Failure } from "../services/failure.js";
import { toConnectError } from "./error-table.js";

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

/** Rewrites the trailer in place; call once the response body has been fully produced. */
export function normalizeGrpcTrailer(trailer: Headers): void {
  const status = trailer.get("grpc-status");
  const raw = trailer.get("grpc-message");
  if (status === null || status === "0" || raw === null) return;
  let message: string;
  try {
    message = decodeURIComponent(raw);
  } catch {
    message = raw;
  }
  if (status === "13" && message.startsWith("parse binary")) {
    const err: ConnectError = toConnectError(
      new Failure("invalid", { detail: "the request message is not valid protobuf" }),
    );
    setTrailerStatus(trailer, err);
    message = err.rawMessage;
  }
  trailer.set("grpc-message", encodeGrpcMessage(message));
}

/** Wraps a gRPC response body so the trailer is normalized when the body ends. */
export async function* normalizeAtEnd(body: AsyncIterable<Uint8Array>, trailer: Headers): AsyncIterable<Uint8Array> {
  yield* body;
  normalizeGrpcTrailer(trailer);
}
