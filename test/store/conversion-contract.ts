/**
 * The store contract's part about following conversion tasks to their end:
 * the record, the due set, leases, saved states with their changes stream,
 * the announcement on the channel's whiteboard-events stream and retention,
 * checked against the documented keys (docs/architecture.md, "Redis schema")
 * read raw. Run inside the store contract (./contract.ts) on every store.
 *
 * Tests of one suite share a key prefix and so one `conv-due` set. Each test
 * takes its due times from a window of its own that lies below every window
 * handed out before (and below NEVER_DUE, the first poll of the other
 * conversion tests), so no claim ever sees another test's tasks.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { AdminStore, ConversionState, ConversionTaskRecord } from "../../src/services/ports.js";
import type { KeySchema } from "../../src/store/schema/keys.js";
import type { ContractSubject, RawAccess } from "./contract.js";

const WEEK_SECONDS = 604_800;
const LEASE_MS = 60_000;
const WINDOW_SPAN = 1_000_000_000;
let lowestWindow = 4_000_000_000_000;

/** The start of a due-time window below every earlier one. */
export function dueWindow(): number {
  lowestWindow -= WINDOW_SPAN;
  return lowestWindow;
}

export function task(uuid: string, over: Partial<ConversionTaskRecord> = {}): ConversionTaskRecord {
  return {
    uuid,
    project: "proj-f",
    channel: "room 1",
    type: "static",
    api: "projector",
    status: "Waiting",
    percent: 0,
    pages: [],
    createdAt: 1_700_000_000_000,
    updatedAt: 1_700_000_000_000,
    by: "presenter",
    backendUuid: uuid,
    ...over,
  };
}

const converting = (percent: number): ConversionState => ({ status: "Converting", percent, pages: [] });

export const finished: ConversionState = {
  status: "Finished",
  percent: 100,
  pageCount: 2,
  pages: [
    { page: 1, url: "https://cdn.example/1.png", width: 1280, height: 720 },
    { page: 2, url: "https://cdn.example/2.png", width: 1280, height: 720 },
  ],
};

export function conversionFollowContract(current: () => ContractSubject): void {
  let store: AdminStore;
  let keys: KeySchema;
  let raw: RawAccess;
  const setUp = () => ({ store, keys, raw } = current());

  /** A recorded task, due at `dueAt`, claimed by `owner` (when given). */
  async function recorded(dueAt: number, owner?: string, over: Partial<ConversionTaskRecord> = {}) {
    const uuid = randomUUID();
    await store.conversions.recordConversion(task(uuid, over), dueAt);
    if (owner !== undefined)
      expect((await store.conversions.claimDueConversions(dueAt, 100, owner, LEASE_MS)).map((t) => t.uuid)).toContain(
        uuid,
      );
    return uuid;
  }

  describe("following conversion tasks", () => {
    it("records the whole task and reads it back", async () => {
      setUp();
      const uuid = randomUUID();
      const dynamic = task(uuid, {
        type: "dynamic",
        api: "legacy",
        status: "Converting",
        percent: 42.5,
        pageCount: 3,
        pages: [{ page: 1, previewUrl: "https://cdn.example/p1.png" }, { page: 2 }],
        prefix: "https://cdn.example/dynamicConvert",
        failedReason: "none yet",
        updatedAt: 1_700_000_000_500,
      });
      await store.conversions.recordConversion(dynamic, dueWindow());
      expect(await store.conversions.getConversion(uuid)).toEqual(dynamic);
      expect(await raw.hgetall(keys.conversion(uuid))).toMatchObject({
        api: "legacy",
        percent: "42.5",
        page_count: "3",
        pages: '[{"page":1,"preview_url":"https://cdn.example/p1.png"},{"page":2}]',
        prefix: "https://cdn.example/dynamicConvert",
        failed_reason: "none yet",
        updated_at: "1700000000500",
      });

      const staticUuid = randomUUID();
      await store.conversions.recordConversion(task(staticUuid, { pages: finished.pages }), dueWindow());
      expect((await raw.hgetall(keys.conversion(staticUuid))).pages).toBe(
        '[{"page":1,"url":"https://cdn.example/1.png","width":1280,"height":720},' +
          '{"page":2,"url":"https://cdn.example/2.png","width":1280,"height":720}]',
      );
      expect((await store.conversions.getConversion(staticUuid))?.pages).toEqual(finished.pages);
    });

    it("reads records written before the follower with defaults", async () => {
      setUp();
      const old = { project: "p", channel: "c", type: "static", status: "Waiting", created_at: "1000", by: "s" };
      const expected = {
        project: "p",
        channel: "c",
        type: "static",
        api: "legacy",
        status: "Waiting",
        percent: 0,
        pages: [],
        createdAt: 1000,
        updatedAt: 1000,
        by: "s",
      };
      const cases: Array<[Record<string, string>, Record<string, unknown>]> = [
        [old, {}],
        [
          { ...old, status: "Finished" },
          { status: "Finished", percent: 100 },
        ],
        [{ ...old, status: "Something new" }, { status: "Something new" }],
        [{ ...old, percent: "101", pages: "not json", page_count: "-1", updated_at: "soon" }, {}],
        [{ ...old, pages: '{"page":1}' }, {}],
        [{ ...old, pages: '[{"page":1},{"page":"2"}]' }, {}],
        [
          { ...old, api: "projector", percent: "7", page_count: "4", updated_at: "2000" },
          {
            api: "projector",
            percent: 7,
            pageCount: 4,
            updatedAt: 2000,
          },
        ],
      ];
      for (const [fields, over] of cases) {
        const uuid = randomUUID();
        await raw.hset(keys.conversion(uuid), fields);
        expect(await store.conversions.getConversion(uuid), JSON.stringify(fields)).toEqual({
          uuid,
          // Older than the queue: the id is the backend's.
          backendUuid: uuid,
          ...expected,
          ...over,
        });
      }
      const unknownApi = randomUUID();
      await raw.hset(keys.conversion(unknownApi), { ...old, api: "v3" });
      expect(await store.conversions.getConversion(unknownApi)).toBeUndefined();
    });

    it("makes a new task due at its first poll, not before, and leases what it hands out", async () => {
      setUp();
      const w = dueWindow();
      const uuid = await recorded(w + 1000);
      expect(keys.conversionsDue()).toBe(`${keys.prefix}conv-due`);
      expect(await raw.zscore(keys.conversionsDue(), uuid)).toBe(w + 1000);

      expect(
        (await store.conversions.claimDueConversions(w + 999, 10, "follower-a", LEASE_MS)).map((t) => t.uuid),
      ).toEqual([]);
      expect(
        (await store.conversions.claimDueConversions(w + 1000, 10, "follower-a", LEASE_MS)).map((t) => t.uuid),
      ).toEqual([uuid]);
      expect(keys.conversionLease(uuid)).toBe(`${keys.prefix}conv:{${uuid}}:lease`);
      expect(await raw.get(keys.conversionLease(uuid))).toBe("follower-a");
      const ttl = await raw.ttl(keys.conversionLease(uuid));
      expect(ttl).toBeGreaterThan(50);
      expect(ttl).toBeLessThanOrEqual(60);
      // Still in conv-due, due again when the lease runs out (a takeover), and leased: nobody else gets it.
      expect(await raw.zscore(keys.conversionsDue(), uuid)).toBe(w + 1000 + LEASE_MS);
      expect(
        (await store.conversions.claimDueConversions(w + 1000, 10, "follower-a", LEASE_MS)).map((t) => t.uuid),
      ).toEqual([]);
    });

    it("skips a task another owner holds until that lease runs out", async () => {
      setUp();
      const w = dueWindow();
      const uuid = await recorded(w);
      expect((await store.conversions.claimDueConversions(w, 10, "follower-a", 200)).map((t) => t.uuid)).toEqual([
        uuid,
      ]);
      expect((await store.conversions.claimDueConversions(w, 10, "follower-b", 200)).map((t) => t.uuid)).toEqual([]);
      await new Promise((r) => setTimeout(r, 300));
      // Due again when the lease runs out, not before.
      expect(
        (await store.conversions.claimDueConversions(w + 199, 10, "follower-b", LEASE_MS)).map((t) => t.uuid),
      ).toEqual([]);
      expect(
        (await store.conversions.claimDueConversions(w + 200, 10, "follower-b", LEASE_MS)).map((t) => t.uuid),
      ).toEqual([uuid]);
      expect(await store.conversions.renewConversionLease(uuid, "follower-a", LEASE_MS)).toBe(false);
    });

    it("hands out at most max tasks, earliest due first, and drops due tasks whose record is gone", async () => {
      setUp();
      const w = dueWindow();
      const uuids = [await recorded(w + 3), await recorded(w + 1), await recorded(w + 2)];
      const orphan = randomUUID();
      await raw.zadd(keys.conversionsDue(), w, orphan);

      expect(
        (await store.conversions.claimDueConversions(w + 10, 2, "follower-a", LEASE_MS)).map((t) => t.uuid),
      ).toEqual([uuids[1], uuids[2]]);
      expect(await raw.zscore(keys.conversionsDue(), orphan)).toBeUndefined();
      expect(
        (await store.conversions.claimDueConversions(w + 10, 2, "follower-b", LEASE_MS)).map((t) => t.uuid),
      ).toEqual([uuids[0]]);
      expect(
        (await store.conversions.claimDueConversions(w + 10, 2, "follower-c", LEASE_MS)).map((t) => t.uuid),
      ).toEqual([]);
      expect(
        (await store.conversions.claimDueConversions(w + 10, 0, "follower-c", LEASE_MS)).map((t) => t.uuid),
      ).toEqual([]);
    });

    it("finds due tasks behind leased ones still due (a follower died between its lease and moving the task)", async () => {
      setUp();
      const w = dueWindow();
      const held = await Promise.all(Array.from({ length: 60 }, (_, i) => recorded(w + i)));
      for (const uuid of held) await raw.setString(keys.conversionLease(uuid), "follower-a");
      const free = await recorded(w + 99);
      expect(
        (await store.conversions.claimDueConversions(w + 100, 1, "follower-b", LEASE_MS)).map((t) => t.uuid),
      ).toEqual([free]);
    });

    it("finds due tasks behind many leased ones", async () => {
      setUp();
      const w = dueWindow();
      const held = await Promise.all(Array.from({ length: 60 }, (_, i) => recorded(w + i)));
      expect(
        (await store.conversions.claimDueConversions(w + 100, 100, "follower-a", LEASE_MS)).map((t) => t.uuid),
      ).toHaveLength(held.length);
      const free = await recorded(w + 99);
      expect(
        (await store.conversions.claimDueConversions(w + 100, 1, "follower-b", LEASE_MS)).map((t) => t.uuid),
      ).toEqual([free]);
    });

    it("renews a lease only for its owner", async () => {
      setUp();
      const w = dueWindow();
      const uuid = await recorded(w, "follower-a");
      expect(await store.conversions.renewConversionLease(uuid, "follower-b", 600_000)).toBe(false);
      expect(await raw.ttl(keys.conversionLease(uuid))).toBeLessThanOrEqual(60);
      expect(await store.conversions.renewConversionLease(uuid, "follower-a", 600_000)).toBe(true);
      expect(await raw.ttl(keys.conversionLease(uuid))).toBeGreaterThan(590);
      expect(await store.conversions.renewConversionLease(randomUUID(), "follower-a", 600_000)).toBe(false);
    });

    it("writes nothing for a follower that does not hold the lease", async () => {
      setUp();
      const w = dueWindow();
      const held = await recorded(w, "follower-b");
      const free = await recorded(w);
      const before = await raw.hgetall(keys.conversion(free));
      expect(await store.conversions.saveConversionState(free, "follower-a", converting(10), w, w + 5000)).toBe(
        "not-owner",
      );
      expect(await store.conversions.saveConversionState(held, "follower-a", finished, w, undefined)).toBe("not-owner");

      expect(await raw.hgetall(keys.conversion(free))).toEqual(before);
      expect((await raw.hgetall(keys.conversion(held))).status).toBe("Waiting");
      for (const uuid of [free, held]) expect(await raw.xlen(keys.conversionChanges(uuid))).toBe(0);
      expect(await raw.zscore(keys.conversionsDue(), free)).toBe(w);
      expect(await raw.zscore(keys.conversionsDue(), held)).toBe(w + LEASE_MS); // where its claim put it
      expect(await raw.get(keys.conversionLease(held))).toBe("follower-b");
      expect(await store.getWhiteboardEvents("proj-f", "room 1", 10_000)).not.toContainEqual(
        expect.objectContaining({ taskUuid: held }),
      );
    });

    it("saves a change with one changes entry, then due again and unleased", async () => {
      setUp();
      const w = dueWindow();
      const uuid = await recorded(w, "follower-a");
      expect(await store.conversions.saveConversionState(uuid, "follower-a", converting(40), w + 7, w + 5000)).toBe(
        "changed",
      );

      expect(await raw.hgetall(keys.conversion(uuid))).toMatchObject({
        status: "Converting",
        percent: "40",
        pages: "[]",
        updated_at: String(w + 7),
        created_at: "1700000000000",
      });
      expect(keys.conversionChanges(uuid)).toBe(`${keys.prefix}conv:{${uuid}}:changes`);
      const entries = await raw.xrange(keys.conversionChanges(uuid));
      expect(entries.map((e) => e.fields)).toEqual([
        [
          ["status", "Converting"],
          ["percent", "40"],
          ["at", String(w + 7)],
        ],
      ]);
      expect(await raw.zscore(keys.conversionsDue(), uuid)).toBe(w + 5000);
      expect(await raw.exists(keys.conversionLease(uuid))).toBe(false);
      expect(await store.conversions.getConversion(uuid)).toMatchObject({
        status: "Converting",
        percent: 40,
        updatedAt: w + 7,
      });
    });

    it("saves the same state as unchanged, without a changes entry or a new updated_at", async () => {
      setUp();
      const w = dueWindow();
      const uuid = await recorded(w, "follower-a");
      expect(await store.conversions.saveConversionState(uuid, "follower-a", converting(40), w + 1, w + 10)).toBe(
        "changed",
      );
      await store.conversions.claimDueConversions(w + 10, 100, "follower-a", LEASE_MS);
      expect(await store.conversions.saveConversionState(uuid, "follower-a", converting(40), w + 2, w + 20)).toBe(
        "unchanged",
      );
      expect(await raw.xlen(keys.conversionChanges(uuid))).toBe(1);
      expect((await raw.hgetall(keys.conversion(uuid))).updated_at).toBe(String(w + 1));
      expect(await raw.zscore(keys.conversionsDue(), uuid)).toBe(w + 20);
      expect(await raw.exists(keys.conversionLease(uuid))).toBe(false);

      // New pages at the same status and percent: a change of the record, not of the progress.
      await store.conversions.claimDueConversions(w + 20, 100, "follower-a", LEASE_MS);
      const withPages = { ...converting(40), pageCount: 1, pages: [{ page: 1, url: "https://cdn.example/1.png" }] };
      expect(await store.conversions.saveConversionState(uuid, "follower-a", withPages, w + 3, w + 30)).toBe("changed");
      expect(await raw.xlen(keys.conversionChanges(uuid))).toBe(1);
      expect(await store.conversions.getConversion(uuid)).toMatchObject({
        pageCount: 1,
        pages: withPages.pages,
        updatedAt: w + 3,
      });
    });

    it("announces a terminal state once on the channel, then forgets the task's due time", async () => {
      setUp();
      const w = dueWindow();
      const channel = `room ${randomUUID()}`;
      const uuid = await recorded(w, "follower-a", { channel });
      expect(await store.conversions.saveConversionState(uuid, "follower-a", finished, w + 9, undefined)).toBe(
        "changed",
      );

      const eventsKey = keys.whiteboardEvents("proj-f", channel);
      expect(eventsKey).toBe(`${keys.prefix}chan:{proj-f/${channel}}:whiteboard-events`);
      const entries = await raw.xrange(eventsKey);
      expect(entries.map((e) => e.fields)).toEqual([
        [
          ["task_uuid", uuid],
          ["status", "Finished"],
          ["type", "static"],
          ["page_count", "2"],
          ["by", "presenter"],
          ["at", String(w + 9)],
        ],
      ]);
      expect(await store.getWhiteboardEvents("proj-f", channel)).toEqual([
        {
          id: entries[0]?.id,
          taskUuid: uuid,
          status: "Finished",
          type: "static",
          pageCount: 2,
          by: "presenter",
          at: w + 9,
        },
      ]);
      expect((await raw.hgetall(keys.conversion(uuid))).announced).toBe("1");
      expect(await raw.zscore(keys.conversionsDue(), uuid)).toBeUndefined();
      expect(await raw.exists(keys.conversionLease(uuid))).toBe(false);
      expect(await store.conversions.getConversion(uuid)).toMatchObject({
        status: "Finished",
        percent: 100,
        pages: finished.pages,
      });

      // Saved again (say a follower whose lease ran out meanwhile): no second announcement.
      await raw.setString(keys.conversionLease(uuid), "follower-b");
      expect(await store.conversions.saveConversionState(uuid, "follower-b", finished, w + 10, undefined)).toBe(
        "unchanged",
      );
      expect(await raw.xlen(eventsKey)).toBe(1);
      expect(await raw.exists(keys.conversionLease(uuid))).toBe(false);
    });

    it("deleteChannel removes the channel's whiteboard-events stream too", async () => {
      setUp();
      const w = dueWindow();
      const channel = `room ${randomUUID()}`;
      await store.createChannel({ project: "proj-f", channel, hostPassphrase: randomUUID() });
      const uuid = await recorded(w, "follower-a", { channel });
      await store.conversions.saveConversionState(uuid, "follower-a", finished, w + 1, undefined);
      expect(await raw.exists(keys.whiteboardEvents("proj-f", channel))).toBe(true);
      expect(await store.deleteChannel("proj-f", channel)).toBe(2); // the passphrase and the stream
      expect(await raw.exists(keys.whiteboardEvents("proj-f", channel))).toBe(false);
    });

    it("announces a terminal state saved by a follower that died before announcing it", async () => {
      setUp();
      const w = dueWindow();
      const channel = `room ${randomUUID()}`;
      const failed = { status: "Fail", percent: 0, pages: [], failedReason: "bad file" } as const;
      // What such a follower leaves: the record terminal and not announced, the task still due.
      const uuid = await recorded(w, "follower-b", { channel, ...failed });
      expect(await store.conversions.saveConversionState(uuid, "follower-b", failed, w + 1, undefined)).toBe(
        "unchanged",
      );
      expect(await store.getWhiteboardEvents("proj-f", channel)).toEqual([
        expect.objectContaining({ taskUuid: uuid, status: "Fail", type: "static", by: "presenter", at: w + 1 }),
      ]);
      expect((await store.getWhiteboardEvents("proj-f", channel))[0]).not.toHaveProperty("pageCount");
      expect(await raw.zscore(keys.conversionsDue(), uuid)).toBeUndefined();
    });

    it("a save for a task whose record is gone writes nothing and forgets the task", async () => {
      setUp();
      const w = dueWindow();
      const uuid = await recorded(w, "follower-a");
      await raw.del(keys.conversion(uuid));
      expect(await store.conversions.saveConversionState(uuid, "follower-a", converting(5), w, w + 10)).toBe(
        "not-owner",
      );
      expect(await raw.exists(keys.conversion(uuid))).toBe(false);
      expect(await raw.exists(keys.conversionChanges(uuid))).toBe(false);
      expect(await raw.exists(keys.conversionLease(uuid))).toBe(false);
      expect(await raw.zscore(keys.conversionsDue(), uuid)).toBeUndefined();
    });

    it("reschedules a failed poll for the lease's owner only, changing nothing else", async () => {
      setUp();
      const w = dueWindow();
      const uuid = await recorded(w, "follower-a");
      const before = await raw.hgetall(keys.conversion(uuid));
      await store.conversions.rescheduleConversion(uuid, "follower-b", w + 50);
      expect(await raw.zscore(keys.conversionsDue(), uuid)).toBe(w + LEASE_MS); // where the claim put it
      expect(await raw.get(keys.conversionLease(uuid))).toBe("follower-a");

      await store.conversions.rescheduleConversion(uuid, "follower-a", w + 9000);
      expect(await raw.zscore(keys.conversionsDue(), uuid)).toBe(w + 9000);
      expect(await raw.exists(keys.conversionLease(uuid))).toBe(false);
      expect(await raw.hgetall(keys.conversion(uuid))).toEqual(before);
      expect(await raw.xlen(keys.conversionChanges(uuid))).toBe(0);
      expect(
        (await store.conversions.claimDueConversions(w + 8999, 10, "follower-b", LEASE_MS)).map((t) => t.uuid),
      ).toEqual([]);
      expect(
        (await store.conversions.claimDueConversions(w + 9000, 10, "follower-b", LEASE_MS)).map((t) => t.uuid),
      ).toEqual([uuid]);
    });

    it("keeps the record and its changes for the retention after the last change", async () => {
      setUp();
      const w = dueWindow();
      const uuid = await recorded(w, "follower-a");
      await store.conversions.saveConversionState(uuid, "follower-a", converting(1), w, w);
      for (const key of [keys.conversion(uuid), keys.conversionChanges(uuid)]) {
        const ttl = await raw.ttl(key);
        expect(ttl, key).toBeGreaterThan(WEEK_SECONDS - 10);
        expect(ttl, key).toBeLessThanOrEqual(WEEK_SECONDS);
      }
    });

    it("reads the changes page by page, oldest first", async () => {
      setUp();
      const w = dueWindow();
      const uuid = await recorded(w);
      for (const percent of [10, 20, 30, 40, 50]) {
        await store.conversions.claimDueConversions(w, 100, "follower-a", LEASE_MS);
        expect(
          await store.conversions.saveConversionState(uuid, "follower-a", converting(percent), w + percent, w),
        ).toBe("changed");
      }
      const first = await store.conversions.readConversionChanges(uuid, "0", 2);
      expect(first.map((c) => [c.status, c.percent, c.at])).toEqual([
        ["Converting", 10, w + 10],
        ["Converting", 20, w + 20],
      ]);
      for (const c of first) expect(c.id).toMatch(/^\d+-\d+$/);
      const second = await store.conversions.readConversionChanges(uuid, first[1]?.id ?? "", 2);
      expect(second.map((c) => c.percent)).toEqual([30, 40]);
      const last = await store.conversions.readConversionChanges(uuid, second[1]?.id ?? "", 2);
      expect(last.map((c) => c.percent)).toEqual([50]);
      expect(await store.conversions.readConversionChanges(uuid, last[0]?.id ?? "", 2)).toEqual([]);
      expect(await store.conversions.readConversionChanges(uuid, "0", 100)).toEqual([...first, ...second, ...last]);
      expect(await store.conversions.readConversionChanges(randomUUID(), "0", 10)).toEqual([]);
      await expect(store.conversions.readConversionChanges(uuid, "$", 10)).rejects.toMatchObject({ kind: "invalid" });
      await expect(store.conversions.readConversionChanges(uuid, "0", 0)).rejects.toMatchObject({ kind: "invalid" });
    });
  });
}
