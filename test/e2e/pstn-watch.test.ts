/**
 * WatchPstnEvents on every protocol, against a real server on the test Redis:
 * the JSON route as server-sent events read with plain fetch (with a
 * Last-Event-ID resume), Connect, gRPC-Web and gRPC with connect-es clients,
 * and gRPC with @grpc/grpc-js's own streaming call. Then the errors a watch
 * answers before it starts, on each protocol.
 */
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { PstnService } from "../../gen/channel/v1/pstn_pb.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { eventually } from "../harness/eventually.js";
import { openSse, type SseEvent } from "../harness/sse.js";
import { expectError } from "./helpers/contract.js";
import { eventIds, grpcJsWatch, muteVia, WATCH_ROUTE } from "./helpers/pstn-watch.js";
import { bearer, type ProtocolName, transport } from "./helpers/rpc.js";

let bl: Boardline;
const SECOND = { channel: "second room", host: "second room host passphrase" };
const BUSY = "busy room";
beforeAll(async () => {
  bl = await startBoardline({ store: "redis" });
  await bl.store.createChannel({ project: bl.world.project, channel: SECOND.channel, hostPassphrase: SECOND.host });
  // A channel whose oldest events were trimmed away (MAXLEN ~ 10 000).
  for (let start = 0; start < 11_000; start += 1000) {
    await Promise.all(
      Array.from({ length: 1000 }, (_, i) =>
        bl.store.setMute({
          project: bl.world.project,
          channel: BUSY,
          uid: `u${start + i}`,
          mute: true,
          by: "s",
          at: 1,
        }),
      ),
    );
  }
}, 60_000);
afterAll(async () => {
  await bl?.close();
});

const watchUrl = () => `${bl.url}${WATCH_ROUTE}`;
const host = () => bl.world.hostPassphrase;
const data = (e: SseEvent | undefined) => e?.data as Record<string, unknown>;

describe("JSON: POST /v1/channel/pstn/events:watch as server-sent events", () => {
  test("from now on: every mute arrives, with id: = cursor = event_id; Last-Event-ID resumes after it", async () => {
    const token = await bl.gatewayToken();
    const body = { channel_ids: [bl.world.channel] };
    const sse = await openSse(watchUrl(), { token, body });
    expect(sse.status).toBe(200);
    expect(sse.headers.get("content-type")).toMatch(/^text\/event-stream/);
    await muteVia(bl, host(), "pstn-1", true);
    await muteVia(bl, host(), "pstn-2", false);
    const [first, second] = [await sse.next(), await sse.next()];
    const ids = (await eventIds(bl, bl.world.channel)).slice(-2);
    expect(data(first)).toEqual({
      event_id: ids[0],
      cursor: ids[0],
      channel_id: bl.world.channel,
      uid: "pstn-1",
      mute: true,
      by: "tester",
      at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      // The line's fields, at what a host's mute says in them.
      kind: "PSTN_EVENT_KIND_MUTE",
      setter: "PSTN_SETTER_HOST",
      caller_id: "",
      hand_raised: false,
      mute_all: false,
      changed: 0,
      leave_reason: "PSTN_LEAVE_REASON_UNSPECIFIED",
    });
    expect(first?.id).toBe(ids[0]);
    expect(data(second)).toMatchObject({ event_id: ids[1], uid: "pstn-2", mute: false });
    expect(second?.id).toBe(ids[1]);
    sse.close();

    await muteVia(bl, host(), "pstn-3", true);
    // A reconnecting client sends its first request again, with the last id it got as Last-Event-ID: the header wins.
    const resumed = await openSse(watchUrl(), {
      token,
      body: { ...body, after: ids[0] },
      lastEventId: second?.id ?? "",
    });
    expect(data(await resumed.next())).toMatchObject({ uid: "pstn-3" });
    resumed.close();
  });

  test("several channels: a v1 cursor; resuming from it brings exactly what came after", async () => {
    const token = await bl.gatewayToken();
    const body = { channel_ids: [bl.world.channel, SECOND.channel] };
    const sse = await openSse(watchUrl(), { token, body });
    await muteVia(bl, host(), "a");
    await muteVia(bl, SECOND.host, "b");
    await muteVia(bl, host(), "c");
    const got = [await sse.next(), await sse.next(), await sse.next()].map(data);
    expect(got.map((e) => e.uid).sort()).toEqual(["a", "b", "c"]);
    expect(got.filter((e) => e.channel_id === bl.world.channel).map((e) => e.uid)).toEqual(["a", "c"]);
    const cursor = String(got[2]?.cursor);
    expect(cursor).toMatch(/^v1\./);
    expect(sse.seen[2]?.id).toBe(cursor);
    sse.close();

    await muteVia(bl, SECOND.host, "d");
    await muteVia(bl, host(), "e");
    const resumed = await openSse(watchUrl(), { token, body, lastEventId: cursor });
    await muteVia(bl, host(), "end");
    const after: string[] = [];
    for (let e = await resumed.next(); e !== undefined; e = await resumed.next()) {
      after.push(String(data(e).uid));
      if (data(e).uid === "end") break;
    }
    resumed.close();
    expect(after.filter((u) => u !== "end").sort()).toEqual(["d", "e"]);
    expect(after.indexOf("e")).toBeLessThan(after.indexOf("end"));
  });

  test("a snapshot's event id as `after` (one channel): the events after it", async () => {
    await muteVia(bl, host(), "before");
    const [snapshotId] = (await eventIds(bl, bl.world.channel)).slice(-1);
    await muteVia(bl, host(), "after-1");
    const sse = await openSse(watchUrl(), {
      token: await bl.gatewayToken(),
      body: { channel_ids: [bl.world.channel], after: snapshotId },
    });
    expect(data(await sse.next())).toMatchObject({ uid: "after-1" });
    sse.close();
  });

  test("another project's channel of that id is its own channel: none of this project's events", async () => {
    const foreign = await bl.gatewayToken(bl.world.otherProject);
    const sse = await openSse(watchUrl(), { token: foreign, body: { channel_ids: [bl.world.channel], after: "0-0" } });
    expect(sse.status).toBe(200);
    await bl.store.setMute({
      project: bl.world.otherProject,
      channel: bl.world.channel,
      uid: "theirs",
      mute: true,
      by: "s",
      at: 1,
    });
    expect(data(await sse.next())).toMatchObject({ uid: "theirs", channel_id: bl.world.channel });
    sse.close();
  });

  test("errors before the watch starts are ordinary JSON error answers", async () => {
    const gateway = await bl.gatewayToken();
    const post = async (token: string, body: unknown) => {
      const res = await fetch(watchUrl(), {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: res.status, headers: res.headers, text: await res.text() };
    };
    expectError(await post(await bl.token(), { channel_ids: [bl.world.channel] }), 403, 403, /pstn\.gateway/);
    expectError(await post(gateway, { channel_ids: [bl.world.channel], after: "garbage" }), 400, 611, /after: /);
    expectError(await post(gateway, { channel_ids: [] }), 400, 611, /channel_ids/);
    expectError(await post(gateway, { channel_ids: ["a", "a"] }), 400, 611, /channel_ids/);
    expectError(await post(gateway, { channel_ids: ["{x}"] }), 400, 611, /channel_ids/);
    const gone = await post(gateway, { channel_ids: [BUSY], after: "0-0" });
    expectError(gone, 410, 410, /trimmed away.*GetPstnState.*as_of_event_id/);
    const lastEventIdToo = await fetch(watchUrl(), {
      method: "POST",
      headers: { authorization: `Bearer ${gateway}`, "content-type": "application/json", "last-event-id": "0-1" },
      body: JSON.stringify({ channel_ids: [BUSY] }),
    });
    expect(lastEventIdToo.status).toBe(410);
  });
});

const RPC_PROTOCOLS: ProtocolName[] = ["connect h1 (json)", "connect h2 (binary)", "grpc-web h1", "grpc h2"];

describe("Connect, gRPC-Web and gRPC (connect-es clients): server streaming", () => {
  test.each(RPC_PROTOCOLS)("%s: the events after a position, with their cursors", async (protocol) => {
    const client = createClient(PstnService, transport(bl, protocol));
    await muteVia(bl, host(), `${protocol} start`);
    const [start] = (await eventIds(bl, bl.world.channel)).slice(-1);
    const abort = new AbortController();
    const seen: Array<{ uid: string; cursor: string; eventId: string; mute: boolean | undefined }> = [];
    const stream = (async () => {
      for await (const e of client.watchPstnEvents(
        { channelIds: [bl.world.channel], after: start ?? "" },
        { headers: bearer(`Bearer ${await bl.gatewayToken()}`), signal: abort.signal },
      )) {
        seen.push({ uid: e.uid, cursor: e.cursor, eventId: e.eventId, mute: e.mute });
      }
    })().catch((e: unknown) => e);
    await muteVia(bl, host(), `${protocol} 1`, false);
    await muteVia(bl, host(), `${protocol} 2`, true);
    await eventually(() => seen.length >= 2, 5_000, "two events");
    abort.abort();
    await stream;
    expect(seen.map((e) => [e.uid, e.mute])).toEqual([
      [`${protocol} 1`, false],
      [`${protocol} 2`, true],
    ]);
    for (const e of seen) expect(e.cursor).toBe(e.eventId);
  });

  test.each(RPC_PROTOCOLS)("%s: PERMISSION_DENIED without the scope, OUT_OF_RANGE when trimmed away", async (p) => {
    const client = createClient(PstnService, transport(bl, p));
    const first = async (token: string, channelIds: string[], after: string) => {
      try {
        for await (const _ of client.watchPstnEvents({ channelIds, after }, { headers: bearer(`Bearer ${token}`) })) {
          return undefined;
        }
      } catch (e) {
        return ConnectError.from(e);
      }
      return undefined;
    };
    const denied = await first(await bl.token(), [bl.world.channel], "");
    expect(denied?.code).toBe(Code.PermissionDenied);
    const gone = await first(await bl.gatewayToken(), [BUSY], "0-0");
    expect(gone?.code).toBe(Code.OutOfRange);
    expect(gone?.rawMessage).toMatch(/GetPstnState/);
  });
});

describe("@grpc/grpc-js streaming", () => {
  let client: grpc.Client;
  beforeAll(() => {
    client = new grpc.Client(new URL(bl.url).host, grpc.credentials.createInsecure());
  });
  afterAll(() => client?.close());

  test("the events of two channels after a position, in order per channel", async () => {
    await muteVia(bl, host(), "grpc-js start");
    const [start] = (await eventIds(bl, bl.world.channel)).slice(-1);
    const watch = grpcJsWatch(
      client,
      { channelIds: [bl.world.channel, SECOND.channel], after: start ?? "" },
      await bl.gatewayToken(),
    );
    for (let i = 0; i < 3; i++) {
      await muteVia(bl, host(), `g${i}`);
      await muteVia(bl, SECOND.host, `s${i}`);
    }
    await eventually(() => watch.events.length >= 6, 5_000, "six events");
    watch.cancel();
    expect((await watch.ended)?.code).toBe(grpc.status.CANCELLED);
    const of = (channel: string) => watch.events.filter((e) => e.channelId === channel).map((e) => e.uid);
    expect(of(bl.world.channel)).toEqual(["g0", "g1", "g2"]);
    expect(of(SECOND.channel)).toEqual(["s0", "s1", "s2"]);
    expect(watch.events.every((e) => e.cursor.startsWith("v1."))).toBe(true);
  });

  test("OUT_OF_RANGE and PERMISSION_DENIED arrive as grpc-js statuses", async () => {
    const gone = grpcJsWatch(client, { channelIds: [BUSY], after: "0-0" }, await bl.gatewayToken());
    expect((await gone.ended)?.code).toBe(grpc.status.OUT_OF_RANGE);
    const denied = grpcJsWatch(client, { channelIds: [bl.world.channel] }, await bl.token());
    expect((await denied.ended)?.code).toBe(grpc.status.PERMISSION_DENIED);
  });
});
