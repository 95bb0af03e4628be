/**
 * The watch hub over the in-memory store (src/services/pstn/watch-hub.ts):
 * the cursors of a many-channel watch stay short because each sweep moves
 * their base up to about now; a cursor resumes exactly after what was handed
 * out; a watch that ends gives its slot back and its channels' subscriptions;
 * a client that does not keep up is ended (it resumes from its cursor).
 */
import { create } from "@bufbuild/protobuf";
import { afterEach, describe, expect, it } from "vitest";
import { WatchPstnEventsRequestSchema } from "../../../gen/channel/v1/pstn_pb.js";
import { type Caller, PSTN_GATEWAY_SCOPE } from "../../../src/services/ports.js";
import type { PushIterator } from "../../../src/services/push-stream.js";
import { PstnWatches } from "../../../src/services/pstn/watch-events.js";
import { PstnWatchHub, DEFAULT_PSTN_WATCH_SETTINGS } from "../../../src/services/pstn/watch-hub.js";
import { channelHash, decodeAfter } from "../../../src/services/pstn/cursor.js";
import type { ChannelEvent } from "../../../src/services/pstn/watch-events.js";
import { compareStreamIds } from "../../../src/services/pstn/stream-ids.js";
import { WatchSlots } from "../../../src/services/watch-slots.js";
import { MemoryStore } from "../../../src/store/memory/store.js";

const PROJECT = "proj";
let hub: PstnWatchHub | undefined;
afterEach(() => hub?.close());

function setUp(o: { maxQueue?: number; maxWatches?: number } = {}) {
  const clock = { offset: 0 };
  const store = new MemoryStore({ now: () => Date.now() + clock.offset });
  const slots = new WatchSlots(o.maxWatches ?? 10);
  hub = new PstnWatchHub(store.pstnEvents, slots, {
    ...DEFAULT_PSTN_WATCH_SETTINGS,
    sweepMs: 3_600_000, // swept by hand below
    ...(o.maxQueue === undefined ? {} : { maxQueue: o.maxQueue }),
  });
  const watch = new PstnWatches(hub, 1000);
  const mute = (channel: string, uid: string) =>
    store.setMute({ project: PROJECT, channel, uid, mute: true, by: "s", at: Date.now() });
  return { store, slots, hub, watch, mute, clock };
}

async function take(events: AsyncIterator<ChannelEvent>, n: number): Promise<ChannelEvent[]> {
  const got: ChannelEvent[] = [];
  for (let i = 0; i < n; i++) {
    const r = await events.next();
    if (r.done === true) break;
    got.push(r.value);
  }
  return got;
}

describe("the cursor of a watch of many channels", () => {
  it("lists only the channels with events since the last sweep, and resumes exactly after them", async () => {
    const { hub, watch, mute, clock } = setUp();
    const channels = Array.from({ length: 200 }, (_, i) => `room-${i}`);
    for (const c of channels.slice(0, 50)) await mute(c, "old"); // history from before the watch
    const events = (await watch.open(PROJECT, channels, ""))[Symbol.asyncIterator]();
    clock.offset += 5_000; // the store's clock: past the clock tolerance of the sweep's reads
    await hub.sweep();
    await mute("room-7", "a");
    await mute("room-150", "b");
    const [a, b] = await take(events, 2);
    expect([a?.channelId, a?.event.uid, b?.channelId, b?.event.uid]).toEqual(["room-7", "a", "room-150", "b"]);
    const cursor = b?.cursor ?? "";
    expect(cursor).toMatch(/^v1\./);
    expect(cursor.length).toBeLessThan(64);
    const start = decodeAfter(cursor, channels.map(channelHash));
    if (start.kind !== "after") throw new Error("a position");
    expect(start.positions.get(7)).toBe(a?.event.id);
    expect(start.positions.get(150)).toBe(b?.event.id);
    expect(start.positions.size).toBe(2);
    expect(compareStreamIds(start.base, a?.event.id ?? "")).toBeLessThan(0);
    await events.return?.();

    await mute("room-3", "c");
    await mute("room-7", "d");
    const resumed = (await watch.open(PROJECT, channels, cursor))[Symbol.asyncIterator]();
    expect((await take(resumed, 2)).map((e) => `${e.channelId} ${e.event.uid}`).sort()).toEqual([
      "room-3 c",
      "room-7 d",
    ]);
    await resumed.return?.();
  });
});

describe("the life of a watch", () => {
  it("a watch that ends gives its slot and its subscriptions back", async () => {
    const { slots, watch, store, mute } = setUp();
    const told: string[] = [];
    store.pstnEvents.notifications.listen({ notified: (ref) => told.push(ref.channel), resubscribed: () => {} });
    const events = (await watch.open(PROJECT, ["x", "y"], ""))[Symbol.asyncIterator]();
    expect(slots.inUse).toBe(1);
    const pending = events.next();
    await events.return?.();
    expect(await pending).toEqual({ done: true, value: undefined });
    expect(slots.inUse).toBe(0);
    await mute("x", "after the end");
    await new Promise((resolve) => setImmediate(resolve));
    expect(told).toEqual([]); // no subscription left
  });

  it("an aborted signal ends the watch while it waits", async () => {
    const { slots, watch } = setUp();
    const abort = new AbortController();
    const events = (await watch.open(PROJECT, ["x"], "", abort.signal))[Symbol.asyncIterator]();
    const pending = events.next();
    abort.abort();
    expect(await pending).toEqual({ done: true, value: undefined });
    expect(slots.inUse).toBe(0);
  });

  it("a client that does not keep up gets what was queued, then `unavailable`: it resumes from its cursor", async () => {
    const { watch, mute, slots } = setUp({ maxQueue: 5 });
    const events = (await watch.open(PROJECT, ["x"], ""))[Symbol.asyncIterator]();
    for (let i = 0; i < 8; i++) await mute("x", `u${i}`);
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    const got = await take(events, 5);
    expect(got.map((e) => e.event.uid)).toEqual(["u0", "u1", "u2", "u3", "u4"]);
    await expect(events.next()).rejects.toMatchObject({ kind: "unavailable", detail: expect.stringMatching(/cursor/) });
    expect(slots.inUse).toBe(0);
    const resumed = (await watch.open(PROJECT, ["x"], got.at(-1)?.cursor ?? ""))[Symbol.asyncIterator]();
    expect((await take(resumed, 3)).map((e) => e.event.uid)).toEqual(["u5", "u6", "u7"]);
    await resumed.return?.();
  });

  it("a watch hands a taker what comes (events, the failure, the end), never from within nextTo, and the taker waits without a promise", async () => {
    const { watch, mute, slots } = setUp({ maxQueue: 2 });
    const [failing, ending] = (await Promise.all([watch.open(PROJECT, ["x"], ""), watch.open(PROJECT, ["y"], "")])).map(
      (w) => w[Symbol.asyncIterator](),
    ) as [PushIterator<ChannelEvent>, PushIterator<ChannelEvent>];
    const handed = (events: PushIterator<ChannelEvent>) =>
      new Promise<IteratorResult<ChannelEvent>>((resolve, reject) => {
        let inside = true;
        events.nextTo({
          took: (r) => (inside ? reject(new Error("from within nextTo")) : resolve(r)),
          failed: (e) => (inside ? reject(new Error("from within nextTo")) : reject(e)),
        });
        inside = false;
      });
    const waiting = handed(failing); // nothing yet: the watch keeps the taker
    await mute("x", "u0");
    expect((await waiting).value?.event.uid).toBe("u0");
    for (let i = 1; i < 4; i++) await mute("x", `u${i}`); // one more than maxQueue
    await new Promise((resolve) => setImmediate(resolve));
    expect((await handed(failing)).value?.event.uid).toBe("u1"); // queued: handed on at once
    expect((await handed(failing)).value?.event.uid).toBe("u2");
    await expect(handed(failing)).rejects.toMatchObject({ kind: "unavailable" });
    expect(await handed(failing)).toEqual({ done: true, value: undefined });

    const end = handed(ending); // waits: the client goes away meanwhile
    await ending.return?.();
    expect(await end).toEqual({ done: true, value: undefined });
    expect(slots.inUse).toBe(0);
  });

  it("close ends every watch as unavailable and refuses new ones", async () => {
    const { hub, watch } = setUp();
    const events = (await watch.open(PROJECT, ["x"], ""))[Symbol.asyncIterator]();
    const pending = events.next();
    hub.close();
    await expect(pending).rejects.toMatchObject({ kind: "unavailable" });
    await expect(watch.open(PROJECT, ["x"], "")).rejects.toMatchObject({ kind: "unavailable" });
  });

  it("the store unavailable: opening fails as unavailable, and the slot is given back", async () => {
    const { store, watch, slots } = setUp();
    store.setUnavailable(true);
    await expect(watch.open(PROJECT, ["x"], "")).rejects.toMatchObject({ kind: "unavailable" });
    expect(slots.inUse).toBe(0);
  });
});

describe("many watchers of one channel", () => {
  it("each of 250 watchers gets every event of a burst once, in order, across the turns a read hands them out in", async () => {
    const { watch, mute } = setUp({ maxWatches: 250 });
    const watchers = await Promise.all(
      Array.from({ length: 250 }, async () => (await watch.open(PROJECT, ["busy"], ""))[Symbol.asyncIterator]()),
    );
    const uids = Array.from({ length: 30 }, (_, i) => `u${i}`);
    await Promise.all(uids.map((uid) => mute("busy", uid)));
    const got = await Promise.all(watchers.map((w) => take(w, uids.length)));
    for (const events of got) {
      expect(events.map((e) => e.event.uid).sort()).toEqual([...uids].sort());
      const ids = events.map((e) => e.event.id);
      expect(ids).toEqual([...ids].sort(compareStreamIds));
    }
    await Promise.all(watchers.map((w) => w.return?.()));
  });

  it("watchers of the same event share one message, unless their cursors differ (a watch of several channels)", async () => {
    const { watch, mute } = setUp();
    const caller: Caller = { project: PROJECT, subject: "gw", scopes: new Set([PSTN_GATEWAY_SCOPE]) };
    const open = async (channelIds: string[]) =>
      (await watch.watchPstnEvents(caller, create(WatchPstnEventsRequestSchema, { channelIds })))[
        Symbol.asyncIterator
      ]();
    const [one, other, several] = await Promise.all([open(["room"]), open(["room"]), open(["room", "hall"])]);
    await mute("room", "u1");
    const [a, b, c] = await Promise.all([one.next(), other.next(), several.next()]);
    expect(a.value).toBe(b.value); // one object: a transport encodes it once for both
    expect(a.value.cursor).toBe(a.value.eventId);
    expect(c.value).not.toBe(a.value);
    expect(c.value.cursor).toMatch(/^v1\./);
    expect({ ...c.value, cursor: "" }).toEqual({ ...a.value, cursor: "" });
    await Promise.all([one.return?.(), other.return?.(), several.return?.()]);
  });
});
