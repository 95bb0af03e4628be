/**
 * The store contract's part about watching mute events (`Store.pstnEvents`):
 * reading a channel's events after a position, telling when the position was
 * trimmed away, and the notification the mute publishes. Run inside the store
 * contract (./contract.ts) on memory, Redis, Cluster and Sentinel.
 */
import { randomBytes } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import type { AdminStore, ChannelRef, PstnEventPage } from "../../src/services/ports.js";
import { compareStreamIds } from "../../src/services/pstn/stream-ids.js";
import type { KeySchema } from "../../src/store/schema/keys.js";
import { eventually } from "../harness/eventually.js";
import type { ContractSubject, RawAccess } from "./contract.js";

const channel = (): ChannelRef => ({
  project: `proj-${randomBytes(6).toString("hex")}`,
  channel: `room ${randomBytes(6).toString("hex")}`,
});

const lost = (page: PstnEventPage, position: string) => compareStreamIds(position, page.lostBefore) < 0;

export function pstnEventsContract(current: () => ContractSubject): void {
  let store: AdminStore;
  let keys: KeySchema;
  let raw: RawAccess;
  const mute = (ch: ChannelRef, uid: string, muted = true) =>
    store.setMute({ ...ch, uid, mute: muted, by: "sub", at: Date.now() });
  const ids = async (ch: ChannelRef) => (await raw.xrange(keys.pstnEvents(ch.project, ch.channel))).map((e) => e.id);

  describe("mute events for watching", () => {
    beforeAll(() => {
      ({ store, keys, raw } = current());
    });

    it("reads the events after a position, oldest first, a page at a time", async () => {
      const ch = channel();
      for (let i = 0; i < 5; i++) await mute(ch, `u${i}`, i % 2 === 0);
      const all = await ids(ch);
      const first = await store.pstnEvents.readEvents(ch, "0-0", 3);
      expect(first.events.map((e) => e.uid)).toEqual(["u0", "u1", "u2"]);
      expect(first.events.map((e) => e.id)).toEqual(all.slice(0, 3));
      expect(first.events[1]).toMatchObject({ uid: "u1", mute: false, by: "sub" });
      expect(first).toMatchObject({ through: all[2], complete: false, lostBefore: "0-0" });
      const rest = await store.pstnEvents.readEvents(ch, first.through, 3);
      expect(rest.events.map((e) => e.uid)).toEqual(["u3", "u4"]);
      expect(rest).toMatchObject({ through: all[4], complete: true });
      const none = await store.pstnEvents.readEvents(ch, rest.through, 3);
      expect(none).toMatchObject({ events: [], through: all[4], complete: true });
      // The store's clock (a store with a clock tests can move is not compared with ours).
      if (current().advanceClock === undefined) expect(Math.abs(none.now - Date.now())).toBeLessThan(10_000);
    });

    it("a read of the tail answers where the stream ends, and a missing stream is empty", async () => {
      const ch = channel();
      expect(await store.pstnEvents.readEvents(ch, undefined, 10)).toMatchObject({
        events: [],
        through: "0-0",
        complete: true,
        lostBefore: "0-0",
      });
      expect(await store.pstnEvents.readEvents(ch, "0-0", 10)).toMatchObject({ events: [], through: "0-0" });
      await mute(ch, "a");
      await mute(ch, "b");
      const tail = await store.pstnEvents.readEvents(ch, undefined, 10);
      expect(tail).toMatchObject({ events: [], through: (await ids(ch))[1], complete: true });
    });

    it("skips entries other writers got wrong, and reads past them", async () => {
      const ch = channel();
      await mute(ch, "good-1");
      await raw.xadd(keys.pstnEvents(ch.project, ch.channel), { uid: "bad", mute: "maybe", by: "x", at: "1" });
      await mute(ch, "good-2");
      const all = await ids(ch);
      const page = await store.pstnEvents.readEvents(ch, all[0] ?? "", 10);
      expect(page.events.map((e) => e.uid)).toEqual(["good-2"]);
      const upToBad = await store.pstnEvents.readEvents(ch, all[0] ?? "", 1);
      expect(upToBad).toMatchObject({ events: [], through: all[1], complete: false });
    });

    it("tells a position whose events were trimmed away (MAXLEN ~) from one that lost nothing", async () => {
      const ch = channel();
      await mute(ch, "first");
      const [firstId] = await ids(ch);
      for (let start = 0; start < 11_000; start += 1000) {
        await Promise.all(Array.from({ length: 1000 }, (_, i) => mute(ch, `u${start + i}`)));
      }
      const kept = await ids(ch);
      const oldestKept = kept[0] ?? "";
      const page = await store.pstnEvents.readEvents(ch, oldestKept, 10);
      expect(lost(page, "0-0")).toBe(true);
      expect(lost(page, firstId ?? "")).toBe(true);
      expect(lost(page, oldestKept)).toBe(false);
      expect(lost(page, kept.at(-1) ?? "")).toBe(false);
      expect(page.events).toHaveLength(10);
      // Why the store looks beyond max-deleted-entry-id: Redis does not raise it when MAXLEN ~ trims.
      if (raw.maxDeletedEntryId !== undefined) {
        expect(await raw.maxDeletedEntryId(keys.pstnEvents(ch.project, ch.channel))).toBe("0-0");
      }
    }, 60_000);

    it("a position before a stream that never lost an entry lost nothing", async () => {
      const ch = channel();
      await mute(ch, "a");
      const page = await store.pstnEvents.readEvents(ch, "0-0", 10);
      expect(page.events).toHaveLength(1);
      expect(lost(page, "0-0")).toBe(false);
    });

    it("notifies the listeners of a subscribed channel of each new event id, counting subscriptions", async () => {
      const ch = channel();
      const other = channel();
      const seen: string[] = [];
      const stop = store.pstnEvents.notifications.listen({
        notified: (ref, id) => seen.push(`${ref.project}/${ref.channel} ${id}`),
        resubscribed: () => {},
      });
      try {
        await store.pstnEvents.notifications.subscribe(ch);
        await store.pstnEvents.notifications.subscribe(ch);
        await mute(ch, "a");
        await mute(other, "b");
        const [id] = await ids(ch);
        await eventually(async () => seen.length >= 1, 5_000, "the notification");
        store.pstnEvents.notifications.unsubscribe(ch);
        await mute(ch, "c"); // still subscribed once
        await eventually(async () => seen.length >= 2, 5_000, "the second notification");
        expect(seen[0]).toBe(`${ch.project}/${ch.channel} ${id}`);
        expect(seen[1]).toBe(`${ch.project}/${ch.channel} ${(await ids(ch))[1]}`);
        store.pstnEvents.notifications.unsubscribe(ch);
        await store.pstnEvents.notifications.subscribe(other);
        await mute(ch, "d");
        await mute(other, "e");
        const otherId = `${other.project}/${other.channel} ${(await ids(other))[1]}`;
        await eventually(async () => seen.includes(otherId), 5_000, "the other channel's notification");
        store.pstnEvents.notifications.unsubscribe(other);
      } finally {
        stop();
      }
    });

    it("subscribes many channels at once (on a Cluster: of every slot and master)", async () => {
      const chs = Array.from({ length: 12 }, channel);
      const seen = new Set<string>();
      const stop = store.pstnEvents.notifications.listen({
        notified: (ref) => seen.add(`${ref.project}/${ref.channel}`),
        resubscribed: () => {},
      });
      try {
        await Promise.all(chs.map((ch) => store.pstnEvents.notifications.subscribe(ch)));
        await Promise.all(chs.map((ch) => mute(ch, "u")));
        await eventually(async () => seen.size === chs.length, 5_000, "every channel's notification");
      } finally {
        for (const ch of chs) store.pstnEvents.notifications.unsubscribe(ch);
        stop();
      }
    });

    it("reading a key of another type fails as unavailable", async () => {
      const ch = channel();
      await raw.setString(keys.pstnEvents(ch.project, ch.channel), "not a stream");
      await expect(store.pstnEvents.readEvents(ch, "0-0", 10)).rejects.toMatchObject({ kind: "unavailable" });
    });
  });
}
