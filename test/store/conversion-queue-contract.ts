/**
 * The store contract's part about the conversion queues: accepting a request
 * (its record, its place, the reuse index, the limit), the index of queues and
 * its leases, the project's pace, the submission's steps and a queued task's
 * end, checked against the documented keys (docs/redis-schema.md) read raw.
 * Run inside the store contract (./contract.ts) on every store.
 *
 * Each test has projects of its own, and takes its times from a window below
 * every earlier test's (dueWindow), so no claim sees another test's queues.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { AdminStore, ConversionTaskRecord, EnqueueOptions } from "../../src/services/ports.js";
import type { KeySchema } from "../../src/store/schema/keys.js";
import type { ContractSubject, RawAccess } from "./contract.js";
import { dueWindow, task } from "./conversion-contract.js";

const LEASE_MS = 60_000;
const URL = "https://files.example/deck.pdf?X-Amz-Signature=sealed-not-stored";

export function conversionQueueContract(current: () => ContractSubject): void {
  let store: AdminStore;
  let keys: KeySchema;
  let raw: RawAccess;
  let project: string;
  let at: number;
  const setUp = () => {
    ({ store, keys, raw } = current());
    project = `queue-${randomUUID().slice(0, 8)}`;
    at = dueWindow();
  };

  function queued(over: Partial<ConversionTaskRecord> = {}): ConversionTaskRecord {
    // Not submitted yet: no backend uuid.
    const { backendUuid: _, ...unsubmitted } = task(randomUUID().replaceAll("-", ""));
    return {
      ...unsubmitted,
      project,
      status: "Queued",
      createdAt: at,
      updatedAt: at,
      request: { resourceUrl: URL, scale: 1.5, reuseKey: "a".repeat(64) },
      ...over,
    };
  }

  const options = (over: Partial<EnqueueOptions> = {}): EnqueueOptions => ({
    reuseKey: "a".repeat(64),
    reuse: true,
    max: 10,
    ...over,
  });

  /** Accepts `n` distinct requests; their uuids in order. */
  async function accept(n: number): Promise<string[]> {
    const uuids: string[] = [];
    for (let i = 0; i < n; i++) {
      const t = queued({ request: { resourceUrl: `${URL}&n=${i}`, reuseKey: String(i).padStart(64, "0") } });
      expect(
        await store.conversionQueue.enqueueConversion(t, options({ reuseKey: String(i).padStart(64, "0") })),
      ).toEqual({
        kind: "queued",
        position: i + 1,
      });
      uuids.push(t.uuid);
    }
    return uuids;
  }

  describe("the conversion queues", () => {
    it("accepts a request: its record Queued with the URL sealed, its place, the queue indexed", async () => {
      setUp();
      const t = queued();
      expect(await store.conversionQueue.enqueueConversion(t, options())).toEqual({ kind: "queued", position: 1 });
      expect(await store.conversions.getConversion(t.uuid)).toMatchObject({ status: "Queued", project });
      expect(await store.conversionQueue.getQueuedTask(t.uuid)).toMatchObject({
        request: { resourceUrl: URL, scale: 1.5, reuseKey: "a".repeat(64) },
      });
      const fields = await raw.hgetall(keys.conversion(t.uuid));
      expect(fields.resource).toBeDefined();
      expect(JSON.stringify(fields)).not.toContain("sealed-not-stored");
      expect(await raw.zscore(keys.conversionQueue(project), t.uuid)).toBe(0);
      expect(await raw.zscore(keys.conversionQueues(), project)).toBe(at);
      expect(await raw.get(keys.conversionReuse(project, "a".repeat(64)))).toBe(t.uuid);
      expect(await store.conversionQueue.queuePosition(project, t.uuid)).toBe(1);
    });

    it("answers the task an identical request made, unless told not to reuse or it is the one replaced", async () => {
      setUp();
      const first = queued();
      await store.conversionQueue.enqueueConversion(first, options());
      const second = queued();
      expect(await store.conversionQueue.enqueueConversion(second, options())).toEqual({
        kind: "reused",
        uuid: first.uuid,
      });
      expect(await raw.exists(keys.conversion(second.uuid))).toBe(false);
      expect(await store.conversionQueue.enqueueConversion(second, options({ reuse: false }))).toEqual({
        kind: "queued",
        position: 2,
      });
      expect(await raw.get(keys.conversionReuse(project, "a".repeat(64)))).toBe(second.uuid);
      const third = queued();
      expect(await store.conversionQueue.enqueueConversion(third, options({ replacing: second.uuid }))).toEqual({
        kind: "queued",
        position: 3,
      });
    });

    it("refuses past its limit, leaving nothing behind", async () => {
      setUp();
      await accept(2);
      const over = queued({ request: { resourceUrl: URL, reuseKey: "f".repeat(64) } });
      expect(
        await store.conversionQueue.enqueueConversion(over, options({ reuseKey: "f".repeat(64), max: 2 })),
      ).toEqual({ kind: "full", length: 2 });
      expect(await raw.exists(keys.conversion(over.uuid))).toBe(false);
      expect(await raw.exists(keys.conversionReuse(project, "f".repeat(64)))).toBe(false);
      expect(await store.conversionQueue.queueLength(project)).toBe(2);
    });

    it("leases a due queue to one submitter at a time, and it is due again when the lease would run out", async () => {
      setUp();
      await accept(1);
      const claimed = await store.conversionQueue.claimDueQueues(at, 10, "s1", LEASE_MS);
      expect(claimed).toEqual([{ project, dueAt: at }]);
      expect(await store.conversionQueue.claimDueQueues(at + LEASE_MS - 1, 10, "s2", LEASE_MS)).toEqual([]);
      expect(await raw.get(keys.conversionQueueLease(project))).toBe("s1");
      expect(await raw.zscore(keys.conversionQueues(), project)).toBe(at + LEASE_MS);
    });

    it("gives the head when it is the project's turn, then makes the next wait a pace", async () => {
      setUp();
      const [head = "", second = ""] = await accept(2);
      await store.conversionQueue.claimDueQueues(at, 10, "s1", LEASE_MS);
      expect(await store.conversionQueue.takeTurn(project, "s2", 1_000)).toEqual({ kind: "lost" });
      expect(await store.conversionQueue.takeTurn(project, "s1", 1_000)).toEqual({ kind: "submit", uuid: head });
      const wait = await store.conversionQueue.takeTurn(project, "s1", 1_000);
      expect(wait.kind).toBe("wait");
      expect(wait.kind === "wait" && wait.ms > 0 && wait.ms <= 1_000).toBe(true);
      // A turn that submitted nothing is given back by its own task only.
      await store.conversionQueue.giveBackTurn(project, second);
      expect((await store.conversionQueue.takeTurn(project, "s1", 1_000)).kind).toBe("wait");
      await store.conversionQueue.giveBackTurn(project, head);
      expect(await store.conversionQueue.takeTurn(project, "s1", 1_000)).toEqual({ kind: "submit", uuid: head });
      // A hold (the backend over its capacity) is no turn to give back.
      await store.conversionQueue.holdTurns(project, 30_000);
      await store.conversionQueue.giveBackTurn(project, head);
      const held = await store.conversionQueue.takeTurn(project, "s1", 1_000);
      expect(held.kind === "wait" && held.ms > 1_000).toBe(true);
    });

    it("skips the tasks the caller is submitting: the next one, or busy when every one is", async () => {
      setUp();
      const [first = "", second = ""] = await accept(2);
      await store.conversionQueue.claimDueQueues(at, 10, "s1", LEASE_MS);
      expect(await store.conversionQueue.takeTurn(project, "s1", 1, [first])).toEqual({ kind: "submit", uuid: second });
      expect(await store.conversionQueue.takeTurn(project, "s1", 1, [first, second])).toEqual({ kind: "busy" });
      await store.conversionQueue.dequeue(project, first);
      await store.conversionQueue.dequeue(project, second);
      expect(await store.conversionQueue.takeTurn(project, "s1", 1, [first, second])).toEqual({ kind: "empty" });
    });

    it("submits a request once: its mark, its uuid recorded with its first state, due for a poll, out of the queue", async () => {
      setUp();
      const [uuid = ""] = await accept(1);
      expect(await store.conversionQueue.markSubmitting(uuid, at)).toBe("marked");
      expect(await store.conversionQueue.markSubmitting(uuid, at)).toBe("marked");
      expect((await raw.hgetall(keys.conversion(uuid))).attempts).toBe("2");
      const submission = {
        backendUuid: "backend-1",
        api: "projector" as const,
        status: "Waiting",
        at: at + 5,
        firstPollAt: at + 10,
      };
      expect(await store.conversionQueue.recordSubmission(uuid, submission)).toBe("recorded");
      expect(await store.conversions.getConversion(uuid)).toMatchObject({
        backendUuid: "backend-1",
        status: "Waiting",
        submittedAt: at + 5,
        updatedAt: at + 5,
      });
      expect((await raw.hgetall(keys.conversion(uuid))).resource).toBeUndefined();
      expect(await raw.zscore(keys.conversionsDue(), uuid)).toBe(at + 10);
      expect((await store.conversions.readConversionChanges(uuid, "0", 10)).map((c) => c.status)).toEqual(["Waiting"]);
      expect(await store.conversionQueue.markSubmitting(uuid, at)).toBe("submitted");
      await store.conversionQueue.followSubmitted(uuid, at + 99);
      expect(await raw.zscore(keys.conversionsDue(), uuid)).toBe(at + 10);
      await store.conversionQueue.dequeue(project, uuid);
      expect(await store.conversionQueue.queueLength(project)).toBe(0);
      await store.conversions.claimDueConversions(at + 10, 100, "cleanup", 1);
    });

    it("ends a queued task once: Abort announced, out of its queue; a submission after keeps the end", async () => {
      setUp();
      const [uuid = ""] = await accept(1);
      const abort = { status: "Abort" as const, percent: 0, pages: [] };
      expect(await store.conversionQueue.endQueued(uuid, abort, at + 1)).toBe("ended");
      expect(await store.conversionQueue.endQueued(uuid, abort, at + 2)).toBe("not-queued");
      expect(await store.conversions.getConversion(uuid)).toMatchObject({ status: "Abort", updatedAt: at + 1 });
      expect(await store.conversionQueue.queueLength(project)).toBe(0);
      const events = await raw.xrange(keys.whiteboardEvents(project, "room 1"));
      expect(events.map((e) => Object.fromEntries(e.fields).task_uuid)).toEqual([uuid]);
      expect(await store.conversionQueue.markSubmitting(uuid, at)).toBe("ended");
      const submission = {
        backendUuid: "late",
        api: "projector" as const,
        status: "Waiting",
        at: at + 3,
        firstPollAt: at + 4,
      };
      expect(await store.conversionQueue.recordSubmission(uuid, submission)).toBe("cancelled");
      expect(await store.conversions.getConversion(uuid)).toMatchObject({ status: "Abort", backendUuid: "late" });
      await store.conversionQueue.finishEnded(uuid);
      expect(await raw.xlen(keys.whiteboardEvents(project, "room 1"))).toBe(1);
    });

    it("takes an empty queue out of the index when given back, and a queue with requests back in at its next turn", async () => {
      setUp();
      const [uuid = ""] = await accept(1);
      await store.conversionQueue.claimDueQueues(at, 10, "s1", LEASE_MS);
      await store.conversionQueue.releaseQueue(project, "s1", at + 500);
      expect(await raw.zscore(keys.conversionQueues(), project)).toBe(at + 500);
      expect(await raw.get(keys.conversionQueueLease(project))).toBeUndefined();
      await store.conversionQueue.dequeue(project, uuid);
      await store.conversionQueue.claimDueQueues(at + 500, 10, "s1", LEASE_MS);
      await store.conversionQueue.releaseQueue(project, "s1", at + 900);
      expect(await raw.zscore(keys.conversionQueues(), project)).toBeUndefined();
      expect(await raw.exists(keys.conversionQueue(project))).toBe(false);
    });
  });
}
