/**
 * The JSON routes, derived at start-up from the `google.api.http` annotations
 * in the protos — there is no second route table. Only the form the contract
 * uses is supported (`post: "/path"` with `body: "*"`, no path variables);
 * anything else in an annotation stops start-up.
 *
 * A request here: method → Content-Type → body size → (pipeline: auth → JSON →
 * validation → operation) → snake_case JSON, or the error table's JSON body.
 */
import { fromJson, getOption, hasOption, type JsonValue, type MessageShape, toJsonString } from "@bufbuild/protobuf";
import { http } from "../../gen/google/api/annotations_pb.js";
import { Failure } from "../services/failure.js";
import { CallCancellation } from "./call-cancellation.js";
import { toJsonError, transportFailures } from "./error-table.js";
import type { Operation, Pipeline } from "./operations.js";
import { readBody, type ReadBodyResult } from "./read-body.js";
import { firstHeader, reply } from "./reply.js";
import type { NodeRequest, NodeResponse } from "./rpc-handler.js";

const JSON_CONTENT_TYPE = /^application\/json\s*(;|$)/i;
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

export interface JsonRoute {
  readonly path: string;
  readonly operation: Operation;
}

/** Reads the routes off the annotations. Throws on an annotation this gateway cannot honour. */
export function jsonRoutes(operations: readonly Operation[]): Map<string, JsonRoute> {
  const routes = new Map<string, JsonRoute>();
  for (const operation of operations) {
    if (!hasOption(operation.method, http)) continue;
    const rule = getOption(operation.method, http);
    const where = `${operation.method.parent.typeName}.${operation.method.name}`;
    if (rule.pattern.case !== "post" || rule.body !== "*" || rule.additionalBindings.length > 0) {
      throw new Error(`${where}: only google.api.http { post: "…" body: "*" } is supported`);
    }
    const path = rule.pattern.value;
    if (!/^\/[A-Za-z0-9/_.-]*$/.test(path)) throw new Error(`${where}: path variables are not supported: ${path}`);
    if (routes.has(path)) throw new Error(`${where}: duplicate route ${path}`);
    routes.set(path, { path, operation });
  }
  return routes;
}

export class JsonGateway {
  constructor(
    private readonly routes: Map<string, JsonRoute>,
    private readonly pipeline: Pipeline,
    private readonly maxBodyBytes: number,
  ) {}

  route(path: string): JsonRoute | undefined {
    return this.routes.get(path);
  }

  async handle(route: JsonRoute, req: NodeRequest, res: NodeResponse, requestId: string): Promise<void> {
    if (req.method !== "POST") {
      res.setHeader("allow", "POST");
      return reply(res, transportFailures.methodNotAllowed());
    }
    if (!JSON_CONTENT_TYPE.test(req.headers["content-type"] ?? "")) {
      return reply(res, transportFailures.unsupportedMediaType());
    }
    const body: ReadBodyResult = await readBody(req, this.maxBodyBytes);
    if (body.kind === "too-large") {
      // Unread bytes may still be on the wire: do not reuse an HTTP/1.1 connection.
      if (req.httpVersionMajor === 1) res.setHeader("connection", "close");
      return reply(res, transportFailures.tooLarge(this.maxBodyBytes));
    }
    if (body.kind === "aborted") return;
    const cancellation = new CallCancellation();
    const onClose = () => cancellation.abort();
    res.once("close", onClose);
    const op = route.operation;
    try {
      const output = await this.pipeline.run(
        op,
        {
          protocol: "json",
          authorization: firstHeader(req.headers.authorization),
          requestId,
          cancellation,
        },
        () => parseJsonRequest(op, body.bytes),
      );
      const json = toJsonString(op.method.output, output, { useProtoFieldName: true, alwaysEmitImplicit: true });
      reply(res, { status: 200, body: json });
    } catch (e) {
      const err = toJsonError(e);
      for (const [k, v] of Object.entries(err.headers)) res.setHeader(k, v);
      reply(res, err);
    } finally {
      res.off("close", onClose);
    }
  }
}

/**
 * Reads a JSON request body: UTF-8, JSON, an object, proto3 JSON of the
 * method's input. Throws `Failure("invalid")` naming what is wrong. The RPC
 * router uses it too (for Connect, gRPC-Web and gRPC with the JSON codec), so
 * a body gets the same 611 message whichever way it arrives.
 */
export function parseJsonRequest(op: Operation, bytes: Uint8Array): MessageShape<typeof op.method.input> {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw new Failure("invalid", { detail: "the body is not valid UTF-8" });
  }
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
    return fromJson(op.method.input, json, { ignoreUnknownFields: true });
  } catch (e) {
    throw new Failure("invalid", { detail: describeJsonError(op, e) });
  }
}

/** protobuf-es says `cannot decode field channel.v1.MuteRequest.mute from JSON: "yes"`; name the field only. */
function describeJsonError(op: Operation, e: unknown): string {
  const message = e instanceof Error ? e.message : "";
  const prefix = `${op.method.input.typeName}.`;
  const at = message.indexOf(prefix);
  if (at >= 0) {
    const field = /^[A-Za-z0-9_]+/.exec(message.slice(at + prefix.length))?.[0];
    const desc = field === undefined ? undefined : op.method.input.fields.find((f) => f.name === field);
    if (desc !== undefined) return `${desc.name}: wrong type or value`;
  }
  return "a field has the wrong type";
}
