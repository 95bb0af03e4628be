/**
 * One ConvertFile with an Idempotency-Key over any protocol, read back into
 * one shape: the JSON route with the `Idempotency-Key` header (fetch), Connect
 * and gRPC-Web with the `idempotency-key` metadata (connect-es clients), and
 * gRPC with it (@grpc/grpc-js, an implementation of its own, on the fast path).
 * Errors carry the documented code (the JSON body's, or the ErrorInfo's), the
 * transport's status and Retry-After (the header, or `retry_after_seconds`).
 * Also: what reached the backend for a resource, waiting for a project's queue
 * to be submitted, and holding or failing the store's enqueue of a ConvertFile.
 */
import { randomUUID } from "node:crypto";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { ConnectError, createClient } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import { expect, vi } from "vitest";
import { ErrorInfoSchema } from "../../../gen/google/rpc/error_details_pb.js";
import {
  ConvertFileRequestSchema,
  ConvertFileResponseSchema,
  WhiteboardService,
} from "../../../gen/whiteboard/v1/whiteboard_pb.js";
import { Failure } from "../../../src/services/failure.js";
import type { QueuePrimitives } from "../../../src/store/conversion-queue-steps.js";
import type { Boardline } from "../../harness/boardline.js";
import { eventually } from "../../harness/eventually.js";
import { postJson } from "../../harness/http.js";
import { convertBody } from "../../harness/request-bodies.js";
import { ROUTES, RPC_PATHS } from "../../harness/routes.js";
import { convertRequest, type ProtocolName, transport } from "./rpc.js";
import { boardlineErrorInfo } from "../../harness/grpc-status-details.js";

export type KeyProtocol = "json" | "connect" | "grpc" | "grpc-web";
export const KEY_PROTOCOLS: readonly KeyProtocol[] = ["json", "connect", "grpc", "grpc-web"];

export type Answer =
  | {
      readonly ok: true;
      readonly taskUuid: string;
      readonly status: string;
      readonly reused: boolean;
      readonly queuePosition: number;
    }
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
    reused?: boolean;
    queue_position?: number;
    error: { code: number; message: string };
  };
  if (res.status === 200) {
    const { task_uuid: taskUuid, status, reused, queue_position: queuePosition } = parsed;
    return { ok: true, taskUuid, status, reused: reused === true, queuePosition: queuePosition ?? 0 };
  }
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
    const { taskUuid, status, reused, queuePosition } = answer;
    return { ok: true, taskUuid, status, reused, queuePosition };
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
        if (error === null && value !== undefined) {
          const { taskUuid, status, reused, queuePosition } = value;
          resolve({ ok: true, taskUuid, status, reused, queuePosition });
        } else resolve(failed(error?.code ?? -1, error?.details ?? "", errorInfoOf(error)));
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

/**
 * How many times the backend was asked to create a task for `resource` (the simulator records
 * every request, refused or not). Requests reach it from the queue, after ConvertFile's answer.
 */
export function createsOf(bl: Boardline, resource: string): number {
  return bl.simulator
    .requests()
    .filter((r) => r.method === "POST" && (r.body as { resource?: unknown } | undefined)?.resource === resource).length;
}

/**
 * Waits until every request the project's queue held when called has been handed to the
 * backend: a request queued now is submitted after them (first come, first served), so once
 * it reached the backend they did too. Lets a test say that a call queued nothing.
 */
export async function queueSubmitted(
  bl: Boardline,
  o: { readonly passphrase?: string; readonly token?: string } = {},
): Promise<void> {
  const resource = `https://docs.example.com/marker-${randomUUID()}.pptx`;
  const body = convertBody(bl, {
    resource_url: resource,
    ...(o.passphrase === undefined ? {} : { passphrase: o.passphrase }),
  });
  const res = await postJson(bl, ROUTES.convert, body, o.token === undefined ? {} : { token: o.token });
  expect(res.status, res.text).toBe(200);
  await eventually(() => createsOf(bl, resource) > 0, 5_000, "the queue's earlier requests to be submitted");
}

/**
 * Holds every ConvertFile of `bl` at the store's enqueue — after its Idempotency-Key was
 * claimed and its checks passed — until `release()`; `held()` counts the calls waiting.
 */
export function holdQueueing(bl: Boardline): { held: () => number; release: () => void } {
  const queue = bl.store.conversionQueue;
  const enqueue = queue.enqueueConversion.bind(queue);
  let held = 0;
  let open = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const spy = vi.spyOn(queue, "enqueueConversion").mockImplementation(async (task, options) => {
    held++;
    await gate;
    return enqueue(task, options);
  });
  return {
    held: () => held,
    release() {
      spy.mockRestore();
      open();
    },
  };
}

/**
 * Makes the store's next enqueue of a ConvertFile fail as a Redis time-out does: `"before"`
 * writing anything; `"unindexed"` once the task is in its project's queue, at the write that puts
 * the queue (again) in the index of queues the submitters read; or `"after"` all of it (the reply
 * lost on its way back).
 */
export function failNextQueueing(bl: Boardline, when: "before" | "unindexed" | "after"): void {
  const timedOut = () => new Failure("unavailable", { cause: new Error("Command timed out") });
  const queue = bl.store.conversionQueue;
  if (when === "unindexed") {
    // The step is the store's own (src/store/conversion-queue-steps.ts), reached through its raw operations.
    const raw = (queue as unknown as { raw: Pick<QueuePrimitives, "indexQueue"> }).raw;
    const indexQueue = raw.indexQueue.bind(raw);
    // The accept's second write to the index: the one after the task joined its queue.
    let calls = 0;
    const spy = vi.spyOn(raw, "indexQueue").mockImplementation(async (project, at) => {
      if (project !== bl.world.project || ++calls < 2) return indexQueue(project, at);
      spy.mockRestore();
      throw timedOut();
    });
    return;
  }
  const enqueue = queue.enqueueConversion.bind(queue);
  const spy = vi.spyOn(queue, "enqueueConversion").mockImplementationOnce(async (task, options) => {
    spy.mockRestore();
    if (when === "after") await enqueue(task, options);
    throw timedOut();
  });
}
