/**
 * One ConvertFile with an Idempotency-Key over any protocol, read back into
 * one shape: the JSON route with the `Idempotency-Key` header (fetch), Connect
 * and gRPC-Web with the `idempotency-key` metadata (connect-es clients), and
 * gRPC with it (@grpc/grpc-js, an implementation of its own, on the fast path).
 * Errors carry the documented code (the JSON body's, or the ErrorInfo's), the
 * transport's status and Retry-After (the header, or `retry_after_seconds`).
 */
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { ConnectError, createClient } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import { ErrorInfoSchema } from "../../../gen/google/rpc/error_details_pb.js";
import {
  ConvertFileRequestSchema,
  ConvertFileResponseSchema,
  WhiteboardService,
} from "../../../gen/whiteboard/v1/whiteboard_pb.js";
import type { Boardline } from "../../harness/boardline.js";
import { postJson } from "../../harness/http.js";
import { ROUTES, RPC_PATHS } from "../../harness/routes.js";
import { convertRequest, type ProtocolName, transport } from "./rpc.js";
import { boardlineErrorInfo } from "../../harness/grpc-status-details.js";

export type KeyProtocol = "json" | "connect" | "grpc" | "grpc-web";
export const KEY_PROTOCOLS: readonly KeyProtocol[] = ["json", "connect", "grpc", "grpc-web"];

export type Answer =
  | { readonly ok: true; readonly taskUuid: string; readonly status: string }
  | {
      readonly ok: false;
      /** The documented `error.code`. */
      readonly code: number;
      /** HTTP status (JSON) or gRPC status code (the others). */
      readonly status: number;
      readonly message: string;
      readonly retryAfter: number | undefined;
    };

export interface CallOptions {
  /** A bearer token (default: the harness's token of world.project). */
  readonly token?: string;
}

/** ConvertFile with `body` (JSON field names) and, unless undefined, the key. */
export async function convertWithKey(
  bl: Boardline,
  protocol: KeyProtocol,
  body: Record<string, unknown>,
  key: string | undefined,
  o: CallOptions = {},
): Promise<Answer> {
  const token = o.token ?? (await bl.token());
  const headers: Record<string, string> = key === undefined ? {} : { "idempotency-key": key };
  if (protocol === "json") return viaJson(bl, body, headers, token);
  if (protocol === "grpc") return viaGrpcJs(bl, body, headers, token);
  return viaConnectEs(bl, protocol === "connect" ? "connect h1 (json)" : "grpc-web h2", body, headers, token);
}

async function viaJson(bl: Boardline, body: object, headers: Record<string, string>, token: string): Promise<Answer> {
  const res = await postJson(bl, ROUTES.convert, body, { token, headers });
  const parsed = JSON.parse(res.text) as {
    task_uuid: string;
    status: string;
    error: { code: number; message: string };
  };
  if (res.status === 200) return { ok: true, taskUuid: parsed.task_uuid, status: parsed.status };
  const retryAfter = res.headers.get("retry-after");
  return {
    ok: false,
    code: parsed.error.code,
    status: res.status,
    message: parsed.error.message,
    retryAfter: retryAfter === null ? undefined : Number(retryAfter),
  };
}

async function viaConnectEs(
  bl: Boardline,
  protocol: ProtocolName,
  body: Record<string, unknown>,
  headers: Record<string, string>,
  token: string,
): Promise<Answer> {
  const client = createClient(WhiteboardService, transport(bl, protocol));
  try {
    const answer = await client.convertFile(convertRequest(body), {
      headers: { ...headers, authorization: `Bearer ${token}` },
    });
    return { ok: true, taskUuid: answer.taskUuid, status: answer.status };
  } catch (e) {
    const err = ConnectError.from(e);
    const info = err.findDetails(ErrorInfoSchema)[0];
    return failed(err.code, err.rawMessage, info?.metadata);
  }
}

function viaGrpcJs(
  bl: Boardline,
  body: Record<string, unknown>,
  headers: Record<string, string>,
  token: string,
): Promise<Answer> {
  const client = new grpc.Client(new URL(bl.url).host, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${token}`);
  for (const [k, v] of Object.entries(headers)) metadata.set(k, v);
  return new Promise<Answer>((resolve) => {
    client.makeUnaryRequest(
      RPC_PATHS.convert,
      (input: ReturnType<typeof convertRequest>) => Buffer.from(toBinary(ConvertFileRequestSchema, input)),
      (bytes: Buffer) => fromBinary(ConvertFileResponseSchema, bytes),
      convertRequest(body),
      metadata,
      { deadline: Date.now() + 10_000 },
      (error, value) => {
        if (error === null && value !== undefined)
          resolve({ ok: true, taskUuid: value.taskUuid, status: value.status });
        else resolve(failed(error?.code ?? -1, error?.details ?? "", errorInfoOf(error)));
      },
    );
  }).finally(() => client.close());
}

function failed(status: number, message: string, metadata: Record<string, string> | undefined): Answer {
  const retryAfter = metadata?.retry_after_seconds;
  return {
    ok: false,
    code: Number(metadata?.code ?? Number.NaN),
    status,
    message,
    retryAfter: retryAfter === undefined ? undefined : Number(retryAfter),
  };
}

/** The ErrorInfo metadata in grpc-status-details-bin. */
function errorInfoOf(error: grpc.ServiceError | null): Record<string, string> | undefined {
  const raw = error?.metadata.get("grpc-status-details-bin")[0];
  if (!(raw instanceof Buffer)) return undefined;
  return boardlineErrorInfo(raw)?.metadata;
}

/** How many tasks the backend was asked to create for `resource` (the simulator records every request). */
export function createsOf(bl: Boardline, resource: string): number {
  return bl.simulator
    .requests()
    .filter((r) => r.method === "POST" && (r.body as { resource?: unknown } | undefined)?.resource === resource).length;
}
