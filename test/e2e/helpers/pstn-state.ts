/**
 * GetPstnState over every protocol of the one port, answered in one shape so
 * a suite can compare them: the JSON routes (HTTP/1.1 and HTTP/2), connect-es
 * clients (Connect h1/h2 binary and JSON, gRPC-Web h1/h2, gRPC) and
 * @grpc/grpc-js. A success is the PstnState as the JSON route renders it; a
 * failure is its documented `error.code`, gRPC code and message.
 */
import { fromBinary, fromJson, type JsonObject, toBinary, toJson } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import { expect } from "vitest";
import { GetPstnStateRequestSchema, PstnStateSchema } from "../../../gen/channel/v1/pstn_pb.js";
import { ErrorInfoSchema } from "../../../gen/google/rpc/error_details_pb.js";
import { mintToken } from "../../../src/auth/jwt.js";
import type { Boardline } from "../../harness/boardline.js";
import { postJson, postJsonH2 } from "../../harness/http.js";
import { GRPC } from "./cases.js";
import { expectError } from "./contract.js";
import { clients, PROTOCOLS, type ProtocolName, transport } from "./rpc.js";

export const STATE_ROUTE = "/v1/channel/pstn/state";
export const STATE_RPC_PATH = "/channel.v1.PstnService/GetPstnState";

export type StateProtocol = "json" | "json h2" | ProtocolName | "grpc-js";
export const STATE_PROTOCOLS: readonly StateProtocol[] = ["json", "json h2", ...PROTOCOLS, "grpc-js"];

/** The gRPC code of each documented `error.code` GetPstnState can answer. */
const GRPC_OF: Record<number, number> = {
  611: GRPC.INVALID_ARGUMENT,
  401: GRPC.UNAUTHENTICATED,
  403: GRPC.PERMISSION_DENIED,
  429: 8, // RESOURCE_EXHAUSTED
};

export type StateAnswer =
  | { readonly ok: true; readonly state: JsonObject }
  | { readonly ok: false; readonly code: number; readonly message: string };

/** A token of `project` with `scopes`, signed with the server's secret. */
export function scopedToken(bl: Boardline, project: string, subject: string, scopes: string[]): Promise<string> {
  return mintToken({ secret: bl.secret, project, subject, ttlSeconds: 600, scopes });
}

/**
 * GetPstnState with the proto3 JSON `body` and `token` (null: none) over
 * `protocol`. Checks on the way what each protocol must carry: the JSON error
 * shape and HTTP status, the gRPC code, the ErrorInfo's numeric code.
 */
export async function readState(
  bl: Boardline,
  protocol: StateProtocol,
  body: Record<string, unknown>,
  token: string | null,
): Promise<StateAnswer> {
  if (protocol === "json" || protocol === "json h2") return readJson(bl, protocol, body, token);
  if (protocol === "grpc-js") return readGrpcJs(bl, body, token);
  const { pstn } = clients(transport(bl, protocol));
  const headers: Record<string, string> = token === null ? {} : { authorization: `Bearer ${token}` };
  try {
    const state = await pstn.getPstnState(request(body), { headers });
    return { ok: true, state: rendered(toBinary(PstnStateSchema, state)) };
  } catch (e) {
    expect(e).toBeInstanceOf(ConnectError);
    const err = e as ConnectError;
    const code = Number(err.findDetails(ErrorInfoSchema)[0]?.metadata["code"]);
    expect({ code, grpc: Code[err.code] }).toEqual({ code, grpc: Code[GRPC_OF[code] ?? -1] });
    return { ok: false, code, message: err.rawMessage };
  }
}

async function readJson(
  bl: Boardline,
  protocol: "json" | "json h2",
  body: unknown,
  token: string | null,
): Promise<StateAnswer> {
  const res = await (protocol === "json" ? postJson : postJsonH2)(bl, STATE_ROUTE, body, { token });
  if (res.status === 200) {
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    return { ok: true, state: JSON.parse(res.text) as JsonObject };
  }
  const { code } = (JSON.parse(res.text) as { error: { code: number } }).error;
  const message = expectError(res, code === 611 ? 400 : code, code);
  return { ok: false, code, message };
}

function readGrpcJs(bl: Boardline, body: Record<string, unknown>, token: string | null): Promise<StateAnswer> {
  const client = new grpc.Client(new URL(bl.url).host, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  if (token !== null) metadata.set("authorization", `Bearer ${token}`);
  return new Promise<StateAnswer>((resolve) => {
    client.makeUnaryRequest(
      STATE_RPC_PATH,
      (input: Uint8Array) => Buffer.from(input),
      (bytes: Buffer) => bytes,
      toBinary(GetPstnStateRequestSchema, request(body)),
      metadata,
      { deadline: Date.now() + 10_000 },
      (error: grpc.ServiceError | null, bytes?: Buffer) => {
        if (error === null) resolve({ ok: true, state: rendered(bytes ?? new Uint8Array()) });
        else resolve({ ok: false, code: codeOfGrpc(error.code), message: error.details });
      },
    );
  }).finally(() => client.close());
}

/** grpc-js reads only the status; the documented code it stands for (each is unique among these). */
function codeOfGrpc(status: number): number {
  const found = Object.entries(GRPC_OF).find(([, g]) => g === status);
  return found === undefined ? -status : Number(found[0]);
}

function request(body: Record<string, unknown>) {
  return fromJson(GetPstnStateRequestSchema, JSON.parse(JSON.stringify(body)) as JsonObject);
}

/** The answer's bytes as the JSON route renders a PstnState. */
function rendered(bytes: Uint8Array): JsonObject {
  const state = fromBinary(PstnStateSchema, bytes);
  return toJson(PstnStateSchema, state, { useProtoFieldName: true, alwaysEmitImplicit: true }) as JsonObject;
}
