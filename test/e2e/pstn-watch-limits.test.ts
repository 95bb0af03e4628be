/**
 * The bounds of WatchPstnEvents: MAX_WATCH_CHANNELS per watch, MAX_WATCHES
 * per instance shared with WatchConversion, a client going away freeing its
 * watch at once, and shutdown ending every watch (gRPC UNAVAILABLE, so clients
 * reconnect to another instance; SSE an `event: error` and the end).
 */
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import { describe, expect, test } from "vitest";
import { PstnService } from "../../gen/channel/v1/pstn_pb.js";
import { startBoardline } from "../harness/boardline.js";
import { eventually } from "../harness/eventually.js";
import { openSse } from "../harness/sse.js";
import { expectError } from "./helpers/contract.js";
import { eventIds, grpcJsWatch, muteVia, WATCH_ROUTE } from "./helpers/pstn-watch.js";
import { bearer, transport } from "./helpers/rpc.js";

const post = async (url: string, token: string, body: unknown) => {
  const res = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
};

test("more channels than MAX_WATCH_CHANNELS: 429 / RESOURCE_EXHAUSTED, saying to split them", async () => {
  const bl = await startBoardline({ store: "memory", maxWatchChannels: 2 });
  try {
    const token = await bl.gatewayToken();
    const res = await post(`${bl.url}${WATCH_ROUTE}`, token, { channel_ids: ["a", "b", "c"] });
    expectError(res, 429, 429, /at most 2 channels per watch/);
    const client = createClient(PstnService, transport(bl, "connect h2 (binary)"));
    const error = await (async () => {
      for await (const _ of client.watchPstnEvents(
        { channelIds: ["a", "b", "c"] },
        { headers: bearer(`Bearer ${token}`) },
      )) {
        return undefined;
      }
    })().catch((e: unknown) => ConnectError.from(e));
    expect(error?.code).toBe(Code.ResourceExhausted);
    const two = await openSse(`${bl.url}${WATCH_ROUTE}`, { token, body: { channel_ids: ["a", "b"] } });
    expect(two.status).toBe(200);
    two.close();
  } finally {
    await bl.close();
  }
});

test("MAX_WATCHES is shared with WatchConversion, and a watch whose client went away frees its place at once", async () => {
  const bl = await startBoardline({ store: "memory", maxWatches: 1 });
  try {
    const token = await bl.gatewayToken();
    const url = `${bl.url}${WATCH_ROUTE}`;
    const first = await openSse(url, { token, body: { channel_ids: [bl.world.channel] } });
    expect(first.status).toBe(200);
    const second = await post(url, token, { channel_ids: [bl.world.channel] });
    expectError(second, 429, 429);
    expect(["1", "2", "3"]).toContain(second.headers.get("retry-after")); // jittered: 1 to 3 s
    const conversion = await fetch(`${bl.url}/v1/whiteboard/fileconvert/any-task/watch`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(conversion.status).toBe(429);
    first.close();
    await eventually(
      async () => {
        const again = await openSse(url, { token, body: { channel_ids: [bl.world.channel] } });
        again.close();
        return again.status === 200;
      },
      5_000,
      "the place to be free again",
    );
  } finally {
    await bl.close();
  }
});

describe("shutdown", () => {
  test("ends every watch at once: gRPC UNAVAILABLE (connect-es and grpc-js), SSE an error event and the end", async () => {
    const bl = await startBoardline({ store: "redis" });
    const token = await bl.gatewayToken();
    await muteVia(bl, bl.world.hostPassphrase, "before");
    const [start] = await eventIds(bl, bl.world.channel);
    const channelIds = [bl.world.channel];
    const sse = await openSse(`${bl.url}${WATCH_ROUTE}`, { token, body: { channel_ids: channelIds, after: start } });
    const client = createClient(PstnService, transport(bl, "grpc h2"));
    const seen: string[] = [];
    const connectWatch = (async () => {
      for await (const e of client.watchPstnEvents(
        { channelIds, after: start ?? "" },
        { headers: bearer(`Bearer ${token}`) },
      )) {
        seen.push(e.uid);
      }
      return "ended";
    })().catch((e: unknown) => ConnectError.from(e).code);
    const grpcJs = new grpc.Client(new URL(bl.url).host, grpc.credentials.createInsecure());
    const js = grpcJsWatch(grpcJs, { channelIds, after: start ?? "" }, token);
    // Every watch is established once it delivered an event made after it was opened.
    await muteVia(bl, bl.world.hostPassphrase, "established");
    await eventually(() => seen.length === 1 && js.events.length === 1, 5_000, "the streams to be established");
    expect((await sse.next())?.data).toMatchObject({ uid: "established" });
    try {
      const started = performance.now();
      await bl.close(); // graceful shutdown with a grace period of 1 s
      expect(performance.now() - started).toBeLessThan(1_000);
      expect(await connectWatch).toBe(Code.Unavailable);
      expect((await js.ended)?.code).toBe(grpc.status.UNAVAILABLE);
      const last = await sse.next();
      expect(last?.event).toBe("error");
      expect(last?.data).toMatchObject({ error: { code: 503, message: expect.stringMatching(/shutting down/) } });
      expect(await sse.next()).toBeUndefined();
    } finally {
      grpcJs.close();
    }
  });
});
