/**
 * What the no-loss suites of WatchPstnEvents share: watchers on every protocol
 * that record what they receive, writers that mute concurrently over the JSON
 * route and record what was acknowledged, and the check that every event the
 * store kept reached every watcher, in order per channel.
 */
import { createClient } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import { expect } from "vitest";
import { PstnService } from "../../gen/channel/v1/pstn_pb.js";
import type { Boardline } from "../harness/boardline.js";
import { postJson } from "../harness/http.js";
import { ROUTES } from "../harness/routes.js";
import { openSse, type SseStream } from "../harness/sse.js";
import { grpcJsWatch, WATCH_ROUTE } from "../e2e/helpers/pstn-watch.js";
import { bearer, transport } from "../e2e/helpers/rpc.js";

export interface Received {
  readonly channel: string;
  readonly id: string;
  readonly uid: string;
  readonly cursor: string;
}

export interface Watcher {
  readonly name: string;
  readonly channels: readonly string[];
  readonly got: Received[];
  stop(): void;
}

/** An SSE watch read with fetch; it records every event until stopped (or the stream ends). */
export async function sseWatcher(
  bl: Boardline,
  name: string,
  channels: readonly string[],
  o: { after?: string; lastEventId?: string; got?: Received[] } = {},
): Promise<Watcher & { readonly sse: SseStream }> {
  const sse = await openSse(`${bl.url}${WATCH_ROUTE}`, {
    token: await bl.gatewayToken(),
    body: { channel_ids: channels, after: o.after ?? "" },
    ...(o.lastEventId === undefined ? {} : { lastEventId: o.lastEventId }),
  });
  expect(sse.status, JSON.stringify(sse.body)).toBe(200);
  const got = o.got ?? [];
  void (async () => {
    for (let e = await sse.next(); e !== undefined; e = await sse.next()) {
      const d = e.data as { channel_id: string; event_id: string; uid: string; cursor: string };
      if (e.event === "message") got.push({ channel: d.channel_id, id: d.event_id, uid: d.uid, cursor: d.cursor });
    }
  })();
  return { name, channels, got, sse, stop: () => sse.close() };
}

/** A grpc-js streaming watch. */
export async function grpcJsWatcher(bl: Boardline, name: string, channels: string[], after: string): Promise<Watcher> {
  const client = new grpc.Client(new URL(bl.url).host, grpc.credentials.createInsecure());
  const watch = grpcJsWatch(client, { channelIds: channels, after }, await bl.gatewayToken());
  return {
    name,
    channels,
    get got() {
      return watch.events.map((e) => ({ channel: e.channelId, id: e.eventId, uid: e.uid, cursor: e.cursor }));
    },
    stop() {
      watch.cancel();
      client.close();
    },
  };
}

/** A connect-es watch over gRPC (HTTP/2). */
export async function connectWatcher(bl: Boardline, name: string, channels: string[], after: string): Promise<Watcher> {
  const client = createClient(PstnService, transport(bl, "connect h2 (binary)"));
  const abort = new AbortController();
  const got: Received[] = [];
  const token = await bl.gatewayToken();
  void (async () => {
    for await (const e of client.watchPstnEvents(
      { channelIds: channels, after },
      { headers: bearer(`Bearer ${token}`), signal: abort.signal },
    )) {
      got.push({ channel: e.channelId, id: e.eventId, uid: e.uid, cursor: e.cursor });
    }
  })().catch(() => {});
  return { name, channels, got, stop: () => abort.abort() };
}

/** `writers` concurrent clients muting `perWriter` times each on random channels; answers the uids acknowledged (200). */
export async function muteConcurrently(
  bl: Boardline,
  hosts: ReadonlyMap<string, string>,
  o: { writers: number; perWriter: number; during?: (done: number) => Promise<void> },
): Promise<{ acknowledged: Set<string>; refused: number }> {
  const channels = [...hosts.keys()];
  const acknowledged = new Set<string>();
  let refused = 0;
  let done = 0;
  await Promise.all(
    Array.from({ length: o.writers }, async (_, w) => {
      for (let i = 0; i < o.perWriter; i++) {
        const channel = channels[(w * 7 + i * 3) % channels.length] as string;
        const uid = `w${w}-${i}`;
        const res = await postJson(bl, ROUTES.mute, { uid, passphrase: hosts.get(channel), mute: i % 2 === 0 });
        if (res.status === 200) acknowledged.add(uid);
        else refused++;
        done++;
        await o.during?.(done);
      }
    }),
  );
  return { acknowledged, refused };
}

/** The uids of a channel's events the store kept, in stream order. */
export async function kept(bl: Boardline, channel: string): Promise<Array<{ id: string; uid: string }>> {
  return (await bl.store.getMuteEvents(bl.world.project, channel, 10_000))
    .reverse()
    .map((e) => ({ id: e.id, uid: e.uid }));
}

/**
 * Every event the store kept on the watcher's channels reached it, each
 * channel's in stream order; with `exactly`, nothing else and nothing twice.
 */
export async function expectDelivered(bl: Boardline, watcher: Watcher, o: { exactly: boolean }): Promise<void> {
  for (const channel of watcher.channels) {
    const want = (await kept(bl, channel)).map((e) => e.id);
    const got = watcher.got.filter((r) => r.channel === channel).map((r) => r.id);
    if (o.exactly) {
      expect(got, `${watcher.name} on ${channel}`).toEqual(want);
      continue;
    }
    const unique = [...new Set(got)];
    expect(new Set(unique), `${watcher.name} on ${channel}`).toEqual(new Set(want));
    expect([...unique].sort(compareIds), `${watcher.name} on ${channel}: first deliveries in order`).toEqual(unique);
  }
}

/** Whether the watcher has every event the store kept on its channels. */
export async function hasAll(bl: Boardline, watcher: Watcher): Promise<boolean> {
  const ids = new Set(watcher.got.map((r) => r.id));
  for (const channel of watcher.channels) for (const e of await kept(bl, channel)) if (!ids.has(e.id)) return false;
  return true;
}

function compareIds(a: string, b: string): number {
  const [am, as] = a.split("-").map(BigInt) as [bigint, bigint];
  const [bm, bs] = b.split("-").map(BigInt) as [bigint, bigint];
  return am === bm ? Number(as - bs) : am < bm ? -1 : 1;
}
