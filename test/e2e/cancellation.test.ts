/**
 * A caller that goes away (or whose gRPC deadline passes) in the middle of a
 * call that waits on the conversion backend cancels the request to the
 * backend: the upstream socket is closed at once instead of waiting for the
 * backend's answer and then going back to the keep-alive pool. The call is
 * CancelConversion of a submitted projector task, which asks the backend
 * while its caller waits (ConvertFile only queues). Over the JSON route, the
 * gRPC fast path (grpc-js) and connect-es's own handler.
 */
import { create, toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, beforeEach, expect, test } from "vitest";
import { CancelConversionRequestSchema, WhiteboardService } from "../../gen/whiteboard/v1/whiteboard_pb.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { eventually } from "../harness/eventually.js";
import { parseBody, postJson } from "../harness/http.js";
import { convertBody } from "../harness/request-bodies.js";
import { ROUTES } from "../harness/routes.js";

/** The backend sleeps this long on a cancel; far longer than any wait below. */
const BACKEND_DELAY_MS = 20_000;
const CANCEL_PATH = "/whiteboard.v1.WhiteboardService/CancelConversion";

let bl: Boardline;
let token: string;
/** A projector task at the backend, still under way in boardline's record. */
let taskUuid: string;

beforeAll(async () => {
  // The follower does not poll the task during the suite (its first poll is minutes away), so
  // the record stays under way and every cancel goes to the backend; nothing else talks to it.
  bl = await startBoardline({
    conversionTimeoutMs: 30_000,
    conversionApi: "projector",
    follow: { firstPollMs: 300_000, maxPollMs: 300_000 },
  });
  token = await bl.token();
  const res = await postJson(bl, ROUTES.convert, convertBody(bl, { resource_url: "https://example.com/deck.pdf" }));
  expect(res.status).toBe(200);
  taskUuid = parseBody<{ task_uuid: string }>(res).task_uuid;
  await eventually(
    async () => (await bl.store.conversions.getConversion(taskUuid))?.backendUuid !== undefined,
    5000,
    "the task to be submitted",
  );
});

afterAll(async () => {
  await bl.close();
});

beforeEach(async () => {
  bl.simulator.clearFaults();
  // The submission's keep-alive socket closes when the backend's keep-alive time-out passes.
  await eventually(() => bl.simulator.openConnections() === 0, 8000, "the backend pool to empty");
  bl.simulator.setFault({ kind: "slow", delayMs: BACKEND_DELAY_MS, operation: "cancel" });
});

const until = (done: () => boolean, what: string) => eventually(done, 3000, what);

/** The cancels of the task that reached the backend. */
const cancelsSeen = () => bl.simulator.requests().filter((r) => r.method === "DELETE").length;

/** Waits until the backend holds the call's request, then until its connection closes. */
async function expectUpstreamCancelled(cancel: () => void): Promise<void> {
  const seen = cancelsSeen();
  await until(() => cancelsSeen() > seen, "the request to reach the backend");
  expect(bl.simulator.openConnections()).toBe(1);
  cancel();
  await until(() => bl.simulator.openConnections() === 0, "the upstream request to be cancelled");
}

test("JSON: the client closing its connection cancels the backend request", async () => {
  const client = new AbortController();
  const answer = fetch(`${bl.url}${ROUTES.convert}/${taskUuid}`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${token}` },
    signal: client.signal,
  }).catch((e: unknown) => e);
  await expectUpstreamCancelled(() => client.abort());
  expect(await answer).toBeInstanceOf(Error);
});

/** Starts CancelConversion with grpc-js (the fast path); `status` is the call's final status code. */
function grpcCancel(client: grpc.Client, options: grpc.CallOptions) {
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${token}`);
  const outcome: { status?: grpc.status } = {};
  const call = client.makeUnaryRequest(
    CANCEL_PATH,
    (x: Buffer) => x,
    (x: Buffer) => x,
    Buffer.from(toBinary(CancelConversionRequestSchema, create(CancelConversionRequestSchema, { taskUuid }))),
    metadata,
    options,
    (err) => {
      outcome.status = err === null ? grpc.status.OK : err.code;
    },
  );
  return { call, outcome };
}

test("gRPC (grpc-js, fast path): cancelling the call cancels the backend request", async () => {
  const client = new grpc.Client(new URL(bl.url).host, grpc.credentials.createInsecure());
  try {
    const { call, outcome } = grpcCancel(client, {});
    await expectUpstreamCancelled(() => call.cancel());
    await until(() => outcome.status !== undefined, "the client to see the cancellation");
    expect(outcome.status).toBe(grpc.status.CANCELLED);
  } finally {
    client.close();
  }
});

test("gRPC (fast path): a grpc-timeout that passes cancels the backend request", async () => {
  const client = new grpc.Client(new URL(bl.url).host, grpc.credentials.createInsecure());
  try {
    const seen = cancelsSeen();
    // The backend has the request long before the 1 s deadline; the server's own timer then cancels it.
    const { outcome } = grpcCancel(client, { deadline: Date.now() + 1000 });
    await until(() => cancelsSeen() > seen, "the request to reach the backend");
    expect(bl.simulator.openConnections()).toBe(1);
    await until(() => bl.simulator.openConnections() === 0, "the upstream request to be cancelled");
    await until(() => outcome.status !== undefined, "the client to see the deadline");
    expect(outcome.status).toBe(grpc.status.DEADLINE_EXCEEDED);
  } finally {
    client.close();
  }
});

test("Connect (connect-es handler): aborting the call cancels the backend request", async () => {
  const client = createClient(WhiteboardService, createConnectTransport({ baseUrl: bl.url, httpVersion: "1.1" }));
  const abort = new AbortController();
  const answer = client
    .cancelConversion({ taskUuid }, { headers: { authorization: `Bearer ${token}` }, signal: abort.signal })
    .catch((e: unknown) => e);
  await expectUpstreamCancelled(() => abort.abort());
  expect(await answer).toBeInstanceOf(Error);
});
