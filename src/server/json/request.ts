/**
 * Reading a JSON request body into the method's input message: UTF-8, JSON,
 * an object, proto3 JSON. Shared by the JSON routes and by the RPC router
 * (Connect, gRPC-Web and gRPC with the JSON codec), so a body gets the same
 * 611 message whichever way it arrives.
 */
import type { DescMessage, JsonObject, JsonValue, MessageShape } from "@bufbuild/protobuf";
import { fromJson } from "@bufbuild/protobuf";
import { isFieldError } from "@bufbuild/protobuf/reflect";
import { Failure } from "../../services/failure.js";

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/** Strict UTF-8 decoding; throws `Failure("invalid")` on a malformed byte sequence. */
export function decodeUtf8(bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw new Failure("invalid", { detail: "the body is not valid UTF-8" });
  }
}

/**
 * Throws `Failure("invalid")` naming what is wrong. Unknown fields are ignored.
 * Path variables (`params`, from the route) take precedence over the body.
 */
export function parseJsonRequest<I extends DescMessage>(
  input: I,
  bytes: Uint8Array,
  params: Readonly<Record<string, string>> = {},
): MessageShape<I> {
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
  return fromJsonObject(input, Object.keys(params).length === 0 ? json : { ...json, ...params });
}

/** The request of a route without a body (GET, DELETE): its path variables, as string fields. */
export function requestFromPath<I extends DescMessage>(
  input: I,
  params: Readonly<Record<string, string>>,
): MessageShape<I> {
  return fromJsonObject(input, { ...params });
}

function fromJsonObject<I extends DescMessage>(input: I, json: JsonObject): MessageShape<I> {
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
