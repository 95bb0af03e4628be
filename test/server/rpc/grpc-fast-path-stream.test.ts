/**
 * Watches on the gRPC fast path (src/server/rpc/grpc-fast-path.ts and
 * grpc-answer.ts), seen from a raw node:http2 client, so every frame is the
 * server's own: the headers go out once the watch is established (before any
 * event), each event is one gRPC message, a deadline ends an open stream with
 * DEADLINE_EXCEEDED trailers, a client that resets its stream gives its watch
 * slot back, and a client that stops reading is ended as documented
 * (UNAVAILABLE once `maxQueue` events wait) with the events kept in the
 * watch's bounded queue, not in the stream's buffer.
 */
import http2 from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, expect, test } from "vitest";
import { PstnEventSchema, WatchPstnEventsRequestSchema } from "../../../gen/channel/v1/pstn_pb.js";
import { frame } from "../../../src/server/rpc/grpc-fast-path.js";
import { type Boardline, startBoardline } from "../../harness/boardline.js";

const PATH = "/channel.v1.PstnService/WatchPstnEvents";
const MAX_QUEUE = 2_000;

let bl: Boardline;
let session: http2.ClientHttp2Session;
beforeAll(async () => {
  bl = await startBoardline({
    store: "memory",
    maxWatches: 2,
    maxWatchesPerProject: 2,
    pstnWatch: { maxQueue: MAX_QUEUE },
  });
  session = http2.connect(bl.url);
});
afterAll(async () => {
  session.close();
  await bl.close();
});

interface RawWatch {
  readonly stream: http2.ClientHttp2Stream;
  readonly headers: Promise<http2.IncomingHttpHeaders>;
  readonly trailers: Promise<http2.IncomingHttpHeaders>;
  /** The messages' bytes received so far (frames not split). */
  readonly data: () => Buffer;
}

async function watch(channel: string, extra: http2.OutgoingHttpHeaders = {}): Promise<RawWatch> {
  const stream = session.request({
    ":method": "POST",
    ":path": PATH,
    "content-type": "application/grpc",
    te: "trailers",
    authorization: `Bearer ${await bl.gatewayToken()}`,
    ...extra,
  });
  const chunks: Buffer[] = [];
  stream.on("data", (c: Buffer) => chunks.push(c));
  const headers = new Promise<http2.IncomingHttpHeaders>((resolve) => stream.once("response", resolve));
  const trailers = new Promise<http2.IncomingHttpHeaders>((resolve) => stream.once("trailers", resolve));
  stream.end(
    frame(toBinary(WatchPstnEventsRequestSchema, create(WatchPstnEventsRequestSchema, { channelIds: [channel] }))),
  );
  return { stream, headers, trailers, data: () => Buffer.concat(chunks) };
}

/** The gRPC messages in `bytes`, decoded (a trailing partial frame is left out). */
function events(bytes: Buffer) {
  const out = [];
  for (let at = 0; at + 5 <= bytes.length; ) {
    const length = bytes.readUInt32BE(at + 1);
    if (at + 5 + length > bytes.length) break;
    out.push(fromBinary(PstnEventSchema, bytes.subarray(at + 5, at + 5 + length)));
    at += 5 + length;
  }
  return out;
}

function mute(channel: string, uid: string) {
  return bl.store.setMute({ project: bl.world.project, channel, uid, mute: true, by: "test", at: Date.now() });
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

test("the headers come once the watch is established, before any event; then one message per event", async () => {
  const w = await watch("fast-path-room");
  const headers = await w.headers;
  expect(headers[":status"]).toBe(200);
  expect(headers["content-type"]).toBe("application/grpc+proto");
  expect(headers["x-request-id"]).toEqual(expect.any(String));
  expect(w.data().length).toBe(0);

  await mute("fast-path-room", "u1");
  await mute("fast-path-room", "u2");
  await until(() => events(w.data()).length === 2, "two events");
  expect(events(w.data()).map((e) => [e.channelId, e.uid, e.mute])).toEqual([
    ["fast-path-room", "u1", true],
    ["fast-path-room", "u2", true],
  ]);
  w.stream.close(http2.constants.NGHTTP2_CANCEL);
});

test("a deadline that passes ends the open watch with DEADLINE_EXCEEDED trailers, and its slot is free again", async () => {
  const w = await watch("deadline-room", { "grpc-timeout": "300m" });
  expect((await w.headers)[":status"]).toBe(200);
  const trailers = await w.trailers;
  expect(trailers["grpc-status"]).toBe("4");
  expect(trailers["grpc-message"]).toBe("the call's deadline passed");
  // maxWatches is 2: two more watches open, so neither this one nor the reset one above kept a slot.
  const a = await watch("deadline-room");
  const b = await watch("deadline-room");
  expect([(await a.headers)[":status"], (await b.headers)[":status"]]).toEqual([200, 200]);
  await until(() => a.data().length === 0 && b.data().length === 0, "nothing");
  a.stream.close(http2.constants.NGHTTP2_CANCEL);
  b.stream.close(http2.constants.NGHTTP2_CANCEL);
  await until(() => a.stream.closed && b.stream.closed, "the resets");
});

test("a client that stops reading is ended UNAVAILABLE after maxQueue waiting events, nothing piling up in its stream", async () => {
  const w = await watch("stalled-room");
  await w.headers;
  w.stream.pause(); // reads nothing from now on: its flow-control window closes
  const total = 50_000;
  for (let i = 0; i < total; i += 500) {
    await Promise.all(Array.from({ length: 500 }, (_, j) => mute("stalled-room", `u${i + j}`)));
    await new Promise((resolve) => setImmediate(resolve));
  }
  w.stream.resume();
  const trailers = await w.trailers;
  expect(trailers["grpc-status"]).toBe("14");
  expect(trailers["grpc-message"]).toBe("the watch fell behind; watch again from the last cursor");
  const delivered = events(w.data()).length;
  // Without backpressure every one of the 50 000 would have waited in the server's stream buffer.
  expect(delivered).toBeGreaterThan(0);
  expect(delivered).toBeLessThan(total / 2);
}, 60_000);
