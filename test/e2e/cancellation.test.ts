/**
 * A caller that goes away (or whose gRPC deadline passes) in the middle of a
 * ConvertFile cancels the request to the conversion backend: the upstream
 * socket is closed at once instead of waiting for the backend's answer and
 * then going back to the keep-alive pool. Over the JSON route, the gRPC fast
 * path (grpc-js and connect-es clients) and connect-es's own handler.
 */
import { toBinary } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, beforeEach, expect, test } from "vitest";
import { ConvertFileRequestSchema, WhiteboardService } from "../../gen/whiteboard/v1/whiteboard_pb.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { eventually } from "../harness/eventually.js";
import { postJson } from "../harness/http.js";
import { RPC_PATHS, ROUTES } from "../harness/routes.js";
import { convertRequest } from "./helpers/rpc.js";

/** The backend sleeps this long; far longer than any wait below. */
const BACKEND_DELAY_MS = 20_000;

let bl: Boardline;
let token: string;
let body: { resource_url: string; passphrase: string; conversion_type: string };

beforeAll(async () => {
  bl = await startBoardline({ conversionTimeoutMs: 30_000 });
  token = await bl.token();
  body = {
    resource_url: "https://example.com/deck.pdf",
    passphrase: bl.world.hostPassphrase,
    conversion_type: "static",
  };
});

afterAll(async () => {
  await bl.close();
});

beforeEach(async () => {
  bl.simulator.clearFaults();
  await until(() => bl.simulator.openConnections() === 0, "the backend pool to empty");
  bl.simulator.setFault({ kind: "slow", delayMs: BACKEND_DELAY_MS });
});

const until = (done: () => boolean, what: string) => eventually(done, 3000, what);

/** Waits until the backend holds the call's request, then until its connection closes. */
async function expectUpstreamCancelled(cancel: () => void): Promise<void> {
  const seen = bl.simulator.requests().length;
  await until(() => bl.simulator.requests().length > seen, "the request to reach the backend");
  expect(bl.simulator.openConnections()).toBe(1);
  cancel();
  await until(() => bl.simulator.openConnections() === 0, "the upstream request to be cancelled");
}

test("JSON: the client closing its connection cancels the backend request", async () => {
  const client = new AbortController();
  const answer = postJson(bl, ROUTES.convert, body, { token, signal: client.signal }).catch((e: unknown) => e);
  await expectUpstreamCancelled(() => client.abort());
  expect(await answer).toBeInstanceOf(Error);
});

/** Starts ConvertFile with grpc-js (the fast path); `status` is the call's final status code. */
function grpcConvert(client: grpc.Client, options: grpc.CallOptions) {
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${token}`);
  const outcome: { status?: grpc.status } = {};
  const call = client.makeUnaryRequest(
    RPC_PATHS.convert,
    (x: Buffer) => x,
    (x: Buffer) => x,
    Buffer.from(toBinary(ConvertFileRequestSchema, convertRequest(body))),
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
    const { call, outcome } = grpcConvert(client, {});
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
    const seen = bl.simulator.requests().length;
    // The backend has the request long before the 1 s deadline; the server's own timer then cancels it.
    const { outcome } = grpcConvert(client, { deadline: Date.now() + 1000 });
    await until(() => bl.simulator.requests().length > seen, "the request to reach the backend");
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
    .convertFile(
      { resourceUrl: body.resource_url, passphrase: body.passphrase, conversionType: "static" },
      { headers: { authorization: `Bearer ${token}` }, signal: abort.signal },
    )
    .catch((e: unknown) => e);
  await expectUpstreamCancelled(() => abort.abort());
  expect(await answer).toBeInstanceOf(Error);
});
