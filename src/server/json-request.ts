/**
 * Reading a JSON request body into the method's input message: UTF-8, JSON,
 * an object, proto3 JSON. Shared by the JSON routes and by the RPC router
 * (Connect, gRPC-Web and gRPC with the JSON codec), so a body gets the same
 * 611 message whichever way it arrives.
 */
import type { DescMessage, JsonValue, MessageShape } from "@bufbuild/protobuf";
import { fromJson } from "@bufbuild/protobuf";
import { isFieldError } from "@bufbuild/protobuf/reflect";
import { Failure } from "../services/failure.js";

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/** Strict UTF-8 decoding; throws `Failure("invalid")` on a malformed byte sequence. */
export function decodeUtf8(bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new Failure("invalid", { detail: "the body is not valid UTF-8" });
  }
}

/** Throws `Failure("invalid")` naming what is wrong. Unknown fields are ignored. */
export function parseJsonRequest<I extends DescMessage>(input: I, bytes: Uint8Array): MessageShape<I> {
  const text = decodeUtf8(bytes);
  let json: JsonValue;
  try {
    json = JSON.parse(text) as JsonValue;
  } catch {
    throw new Failure("invalid", { detail: "the body is not valid JSON" });
  }
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    throw new Failure("invalid", { detail: "the body must be a JSON object" });
  }
  try {
    return fromJson(input, json, { ignoreUnknownFields: true });
  } catch (e) {
    throw new Failure("invalid", { detail: describeJsonError(input, e) });
  }
}

/** Names the offending field of the input message (protobuf-es attaches it as the error's cause). */
function describeJsonError(input: DescMessage, e: unknown): string {
  const cause = e instanceof Error ? e.cause : undefined;
  if (isFieldError(cause)) {
    const field = cause.field();
    if (field.kind === "field" && field.parent === input) return `${field.name}: wrong type or value`;
  }
  return "a field has the wrong type";
}
