/**
 * The phone line's calls (ReportLine, SyncLine, MuteAll, SetPstnPolicy,
 * LowerHands, GetPstnState) over every protocol of the one port, answered in
 * one shape: the JSON routes (HTTP/1.1 and HTTP/2), connect-es clients
 * (Connect, gRPC-Web, gRPC) and @grpc/grpc-js. A success is the answer as the
 * JSON route renders it (proto field names, defaults shown); a failure is its
 * documented `error.code` and message, checked on the way as readState does.
 */
import {
  type DescMessage,
  type DescMethodUnary,
  fromBinary,
  fromJson,
  type JsonObject,
  toBinary,
  toJson,
} from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import { expect } from "vitest";
import { PstnService } from "../../../gen/channel/v1/pstn_pb.js";
import { ErrorInfoSchema } from "../../../gen/google/rpc/error_details_pb.js";
import type { Boardline } from "../../harness/boardline.js";
import { postJson, postJsonH2 } from "../../harness/http.js";
import { expectError } from "./contract.js";
import { type StateProtocol, STATE_PROTOCOLS } from "./pstn-state.js";
import { transport } from "./rpc.js";

export const LINE_PROTOCOLS = STATE_PROTOCOLS;

const M = PstnService.method;
export const LINE_METHODS = {
  report: { method: M.reportLine, route: "/v1/channel/pstn/line:report" },
  sync: { method: M.syncLine, route: "/v1/channel/pstn/line:sync" },
  muteAll: { method: M.muteAll, route: "/v1/channel/pstn/mute:all" },
  policy: { method: M.setPstnPolicy, route: "/v1/channel/pstn/policy" },
  lowerHands: { method: M.lowerHands, route: "/v1/channel/pstn/hands:lower" },
  state: { method: M.getPstnState, route: "/v1/channel/pstn/state" },
  mute: { method: M.mute, route: "/v1/channel/pstn/mute" },
} as const;

export type LineMethod = keyof typeof LINE_METHODS;

export type LineAnswer =
  | { readonly ok: true; readonly answer: JsonObject }
  | { readonly ok: false; readonly code: number; readonly message: string };

/** `name` with the proto3 JSON `body` and `token` over `protocol`. */
export async function callLine(
  bl: Boardline,
  protocol: StateProtocol,
  name: LineMethod,
  body: Record<string, unknown>,
  token: string,
): Promise<LineAnswer> {
  const { method, route } = LINE_METHODS[name];
  const m = method as DescMethodUnary<DescMessage, DescMessage>;
  if (protocol === "json" || protocol === "json h2") {
    const res = await (protocol === "json" ? postJson : postJsonH2)(bl, route, body, { token });
    if (res.status === 200) return { ok: true, answer: JSON.parse(res.text) as JsonObject };
    const { code } = (JSON.parse(res.text) as { error: { code: number } }).error;
    return { ok: false, code, message: expectError(res, code === 611 ? 400 : code, code) };
  }
  const input = fromJson(m.input, JSON.parse(JSON.stringify(body)) as JsonObject);
  if (protocol === "grpc-js") return callGrpcJs(bl, m, toBinary(m.input, input), token);
  const client = createClient(PstnService, transport(bl, protocol)) as unknown as Record<
    string,
    (req: unknown, o: unknown) => Promise<unknown>
  >;
  const call = client[m.localName];
  if (call === undefined) throw new Error(`no client method ${m.localName}`);
  try {
    const out = await call(input, { headers: { authorization: `Bearer ${token}` } });
    return { ok: true, answer: rendered(m.output, toBinary(m.output, out as never)) };
  } catch (e) {
    expect(e).toBeInstanceOf(ConnectError);
    const err = e as ConnectError;
    const code = Number(err.findDetails(ErrorInfoSchema)[0]?.metadata["code"]);
    expect(Code[err.code]).toBeDefined();
    return { ok: false, code, message: err.rawMessage };
  }
}

/** The same call, that must succeed: its answer. */
export async function lineOk(
  bl: Boardline,
  protocol: StateProtocol,
  name: LineMethod,
  body: Record<string, unknown>,
  token: string,
): Promise<JsonObject> {
  const a = await callLine(bl, protocol, name, body, token);
  if (!a.ok) throw new Error(`${name} over ${protocol}: ${a.code} ${a.message}`);
  return a.answer;
}

function callGrpcJs(
  bl: Boardline,
  m: DescMethodUnary<DescMessage, DescMessage>,
  bytes: Uint8Array,
  token: string,
): Promise<LineAnswer> {
  const client = new grpc.Client(new URL(bl.url).host, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${token}`);
  return new Promise<LineAnswer>((resolve) => {
    client.makeUnaryRequest(
      `/${m.parent.typeName}/${m.name}`,
      (input: Uint8Array) => Buffer.from(input),
      (out: Buffer) => out,
      bytes,
      metadata,
      { deadline: Date.now() + 10_000 },
      (error: grpc.ServiceError | null, out?: Buffer) => {
        if (error === null) resolve({ ok: true, answer: rendered(m.output, out ?? new Uint8Array()) });
        // grpc-js reads only the status: the code stands in negated, the message as sent.
        else resolve({ ok: false, code: -error.code, message: error.details });
      },
    );
  }).finally(() => client.close());
}

/** The answer's bytes as the JSON route renders them. */
function rendered(schema: DescMessage, bytes: Uint8Array): JsonObject {
  return toJson(schema, fromBinary(schema, bytes), { useProtoFieldName: true, alwaysEmitImplicit: true }) as JsonObject;
}
