/**
 * ChannelAdminService over the protocols of the one port, answered in one
 * shape: the JSON routes (from the methods' `google.api.http`), Connect,
 * gRPC-Web and gRPC through connect-es clients (gRPC unary takes the fast
 * path), and @grpc/grpc-js. A success is the answer as the JSON route renders
 * it; a failure its documented `error.code`, its gRPC code (RPC protocols) and
 * its message.
 */
import { type DescMethodUnary, fromBinary, fromJson, type JsonObject, toBinary, toJson } from "@bufbuild/protobuf";
import { ConnectError, createClient } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import { expect } from "vitest";
import { ChannelAdminService } from "../../../gen/channel/v1/channel_admin_pb.js";
import { ErrorInfoSchema } from "../../../gen/google/rpc/error_details_pb.js";
import { mintToken } from "../../../src/auth/jwt.js";
import { httpRuleOf, httpBinding } from "../../../src/server/json/routes.js";
import type { Boardline } from "../../harness/boardline.js";
import { postJson } from "../../harness/http.js";
import { expectError } from "./contract.js";
import { type ProtocolName, transport } from "./rpc.js";

export type AdminProtocol =
  | "json"
  | Extract<ProtocolName, "connect h1 (binary)" | "grpc-web h2" | "grpc h2">
  | "grpc-js";
export const ADMIN_PROTOCOLS: readonly AdminProtocol[] = [
  "json",
  "connect h1 (binary)",
  "grpc-web h2",
  "grpc h2",
  "grpc-js",
];

export type AdminMethod = keyof typeof ChannelAdminService.method;

export type AdminAnswer =
  | { readonly ok: true; readonly body: JsonObject }
  | { readonly ok: false; readonly code: number; readonly grpc: number | undefined; readonly message: string };

/** A token of `project` with `scopes` (default: channels.admin), signed with the server's secret. */
export function adminToken(
  bl: Boardline,
  project: string,
  scopes = ["channels.admin"],
  subject = "meetings",
): Promise<string> {
  return mintToken({ secret: bl.secret, project, subject, ttlSeconds: 600, scopes });
}

/** Calls `method` with the proto3 JSON `body` and `token` over `protocol`. */
export async function callAdmin(
  bl: Boardline,
  protocol: AdminProtocol,
  name: AdminMethod,
  body: Record<string, unknown>,
  token: string | null,
  idempotencyKey?: string,
): Promise<AdminAnswer> {
  const method = ChannelAdminService.method[name] as DescMethodUnary;
  const headers: Record<string, string> = token === null ? {} : { authorization: `Bearer ${token}` };
  if (idempotencyKey !== undefined) headers["idempotency-key"] = idempotencyKey;
  if (protocol === "json") return callJson(bl, method, body, token, headers);
  const input = fromJson(method.input, JSON.parse(JSON.stringify(body)) as JsonObject);
  if (protocol === "grpc-js") return callGrpcJs(bl, method, toBinary(method.input, input), headers);
  const client = createClient(ChannelAdminService, transport(bl, protocol)) as unknown as Record<
    string,
    (req: unknown, o: { headers: Record<string, string> }) => Promise<unknown>
  >;
  try {
    const answer = await (client[method.localName] as NonNullable<(typeof client)[string]>)(input, { headers });
    return { ok: true, body: rendered(method, toBinary(method.output, answer as never)) };
  } catch (e) {
    expect(e).toBeInstanceOf(ConnectError);
    const err = e as ConnectError;
    const code = Number(err.findDetails(ErrorInfoSchema)[0]?.metadata["code"]);
    return { ok: false, code, grpc: err.code, message: err.rawMessage };
  }
}

async function callJson(
  bl: Boardline,
  method: DescMethodUnary,
  body: Record<string, unknown>,
  token: string | null,
  headers: Record<string, string>,
): Promise<AdminAnswer> {
  const rule = httpRuleOf(method);
  if (rule === undefined) throw new Error(`${method.name} has no JSON route`);
  const binding = httpBinding(method, rule);
  const rest = { ...body };
  const path = binding.segments
    .map((s) => {
      if ("literal" in s) return s.literal;
      const value = String(rest[s.field] ?? "");
      delete rest[s.field];
      return encodeURIComponent(value);
    })
    .join("/");
  const { authorization: _a, ...others } = headers;
  const res = await postJson(bl, `/${path}`, binding.hasBody ? body : undefined, {
    token,
    method: binding.httpMethod,
    headers: others,
    ...(binding.hasBody ? {} : { contentType: null }),
  });
  if (res.status === 200) return { ok: true, body: JSON.parse(res.text) as JsonObject };
  const { code } = (JSON.parse(res.text) as { error: { code: number } }).error;
  const message = expectError(res, code === 611 ? 400 : code, code);
  return { ok: false, code, grpc: undefined, message };
}

function callGrpcJs(
  bl: Boardline,
  method: DescMethodUnary,
  bytes: Uint8Array,
  headers: Record<string, string>,
): Promise<AdminAnswer> {
  const client = new grpc.Client(new URL(bl.url).host, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  for (const [k, v] of Object.entries(headers)) metadata.set(k, v);
  return new Promise<AdminAnswer>((resolve) => {
    client.makeUnaryRequest(
      `/${ChannelAdminService.typeName}/${method.name}`,
      (input: Uint8Array) => Buffer.from(input),
      (answer: Buffer) => answer,
      bytes,
      metadata,
      { deadline: Date.now() + 10_000 },
      (error: grpc.ServiceError | null, answer?: Buffer) => {
        if (error === null) {
          resolve({ ok: true, body: rendered(method, answer ?? new Uint8Array()) });
          return;
        }
        const code = DOCUMENTED_OF_GRPC[error.code] ?? -1;
        resolve({ ok: false, code, grpc: error.code, message: error.details });
      },
    );
  }).finally(() => client.close());
}

/** grpc-js reads only the status: the documented code it stands for (409 covers three gRPC codes). */
const DOCUMENTED_OF_GRPC: Record<number, number> = { 3: 611, 5: 404, 6: 409, 7: 403, 9: 409, 10: 409, 16: 401 };

/** The answer's bytes as the JSON route renders them. */
function rendered(method: DescMethodUnary, bytes: Uint8Array): JsonObject {
  const message = fromBinary(method.output, bytes);
  return toJson(method.output, message, { useProtoFieldName: true, alwaysEmitImplicit: true }) as JsonObject;
}
