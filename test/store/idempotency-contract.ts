/**
 * The store contract's part about idempotency records (safe retries of
 * ConvertFile): `idem:{<project>}:<sha256 hex of [sub, key]>`, claimed with SET
 * NX PX semantics in one step, completed, marked unknown or released only by
 * the call holding it. Run inside the store contract (./contract.ts) on every
 * store and topology.
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { AdminStore, ClaimRequest, IdempotencyScope } from "../../src/services/ports.js";
import type { KeySchema } from "../../src/store/schema/keys.js";
import type { ContractSubject, RawAccess } from "./contract.js";

const LOCK_MS = 60_000;
const DAY_SECONDS = 86_400;

export function idempotencyContract(current: () => ContractSubject): void {
  let store: AdminStore;
  let keys: KeySchema;
  let raw: RawAccess;
  let subject: ContractSubject;
  const setUp = () => {
    subject = current();
    ({ store, keys, raw } = subject);
  };
  const scope = (over: Partial<IdempotencyScope> = {}): IdempotencyScope => ({
    project: `proj-${randomBytes(6).toString("hex")}`,
    subject: "alice",
    key: randomUUID(),
    ...over,
  });
  const request = (over: Partial<ClaimRequest> = {}): ClaimRequest => ({
    owner: randomUUID(),
    fingerprint: createHash("sha256").update(randomUUID()).digest("hex"),
    lockMs: LOCK_MS,
    at: 1_700_000_000_000,
    ...over,
  });
  const keyOf = (s: IdempotencyScope) => keys.idempotency(s.project, s.subject, s.key);
  const answer = '{"task_uuid":"abc","status":"Waiting"}';

  describe("idempotency records", () => {
    it("a claim of a free key writes a pending record held for the lock, under the documented key", async () => {
      setUp();
      const s = scope({ subject: "alice\nbob", key: "k 1" });
      const r = request();
      expect(await store.idempotency.claim(s, r)).toEqual({ kind: "claimed" });
      const hash = createHash("sha256")
        .update(JSON.stringify([s.subject, s.key]))
        .digest("hex");
      expect(keyOf(s)).toBe(`${keys.prefix}idem:{${s.project}}:${hash}`);
      expect(await raw.hgetall(keyOf(s))).toEqual({
        state: "pending",
        fingerprint: r.fingerprint,
        owner: r.owner,
        created_at: String(r.at),
      });
      const ttl = await raw.ttl(keyOf(s));
      expect(ttl).toBeGreaterThan(LOCK_MS / 1000 - 10);
      expect(ttl).toBeLessThanOrEqual(LOCK_MS / 1000);
    });

    it("a second claim finds the pending record and changes nothing", async () => {
      setUp();
      const s = scope();
      const first = request();
      await store.idempotency.claim(s, first);
      const second = await store.idempotency.claim(s, request({ lockMs: 5 }));
      expect(second).toMatchObject({ kind: "pending", fingerprint: first.fingerprint });
      const left = second.kind === "pending" ? second.expiresInMs : -1;
      expect(left).toBeGreaterThan(LOCK_MS - 10_000);
      expect(left).toBeLessThanOrEqual(LOCK_MS);
      expect((await raw.hgetall(keyOf(s))).owner).toBe(first.owner);
    });

    it("the holder completes it: done with the answer, kept 24 hours; later claims find the answer", async () => {
      setUp();
      const s = scope();
      const r = request();
      await store.idempotency.claim(s, r);
      expect(await store.idempotency.complete(s, r, answer)).toBe(true);
      expect(await raw.hgetall(keyOf(s))).toEqual({
        state: "done",
        fingerprint: r.fingerprint,
        answer,
        created_at: String(r.at),
      });
      const ttl = await raw.ttl(keyOf(s));
      expect(ttl).toBeGreaterThan(DAY_SECONDS - 10);
      expect(ttl).toBeLessThanOrEqual(DAY_SECONDS);
      expect(await store.idempotency.claim(s, request())).toEqual({ kind: "done", fingerprint: r.fingerprint, answer });
    });

    it("only the holder completes, marks or releases; a done record is never released", async () => {
      setUp();
      const s = scope();
      const r = request();
      await store.idempotency.claim(s, r);
      const other = randomUUID();
      expect(await store.idempotency.complete(s, { ...r, owner: other }, "other")).toBe(false);
      expect(await store.idempotency.markUnknown(s, other, 5)).toBe(false);
      expect(await store.idempotency.release(s, other)).toBe(false);
      expect((await raw.hgetall(keyOf(s))).state).toBe("pending");
      await store.idempotency.complete(s, r, answer);
      expect(await store.idempotency.release(s, r.owner)).toBe(false);
      expect(await store.idempotency.markUnknown(s, r.owner, 5)).toBe(false);
      expect((await raw.hgetall(keyOf(s))).state).toBe("done");
    });

    it("a completion after the lock ran out still stores the answer, unless another call took the key", async () => {
      setUp();
      const s = scope();
      const r = request();
      await store.idempotency.claim(s, r);
      await raw.del(keyOf(s)); // the lock ran out
      expect(await store.idempotency.complete(s, r, answer)).toBe(true);
      expect((await raw.hgetall(keyOf(s))).state).toBe("done");

      const t = scope();
      const late = request();
      await store.idempotency.claim(t, late);
      await raw.del(keyOf(t));
      const taker = request();
      expect(await store.idempotency.claim(t, taker)).toEqual({ kind: "claimed" });
      expect(await store.idempotency.complete(t, late, answer)).toBe(false);
      expect(await raw.hgetall(keyOf(t))).toMatchObject({ state: "pending", owner: taker.owner });
    });

    it("marked unknown: held for a new lock from now, found as unknown", async () => {
      setUp();
      const s = scope();
      const r = request({ lockMs: 5_000 });
      await store.idempotency.claim(s, r);
      expect(await store.idempotency.markUnknown(s, r.owner, LOCK_MS)).toBe(true);
      expect(await raw.hgetall(keyOf(s))).toMatchObject({ state: "unknown", owner: r.owner });
      expect(await raw.ttl(keyOf(s))).toBeGreaterThan(LOCK_MS / 1000 - 10);
      const found = await store.idempotency.claim(s, request());
      expect(found).toMatchObject({ kind: "unknown", fingerprint: r.fingerprint });
      expect(await store.idempotency.release(s, r.owner)).toBe(true);
      expect(await raw.exists(keyOf(s))).toBe(false);
    });

    it("released, the key is free for the next claim", async () => {
      setUp();
      const s = scope();
      const r = request();
      await store.idempotency.claim(s, r);
      expect(await store.idempotency.release(s, r.owner)).toBe(true);
      expect(await raw.exists(keyOf(s))).toBe(false);
      expect(await store.idempotency.claim(s, request())).toEqual({ kind: "claimed" });
    });

    it("keys are per project, subject and key", async () => {
      setUp();
      const s = scope();
      await store.idempotency.claim(s, request());
      for (const other of [{ project: `${s.project}x` }, { subject: "bob" }, { key: `${s.key}x` }]) {
        expect(await store.idempotency.claim({ ...s, ...other }, request()), JSON.stringify(other)).toEqual({
          kind: "claimed",
        });
      }
    });

    it("a record boardline did not write is replaced by the next claim", async () => {
      setUp();
      const broken: Array<Record<string, string>> = [
        { state: "done", fingerprint: "f" }, // no answer
        { state: "pending" }, // no fingerprint
        { state: "finished", fingerprint: "f", answer },
      ];
      for (const fields of broken) {
        const s = scope();
        await raw.hset(keyOf(s), fields);
        const r = request();
        expect(await store.idempotency.claim(s, r), JSON.stringify(fields)).toEqual({ kind: "claimed" });
        expect(await raw.hgetall(keyOf(s))).toEqual({
          state: "pending",
          fingerprint: r.fingerprint,
          owner: r.owner,
          created_at: String(r.at),
        });
      }
      const s = scope();
      await raw.setString(keyOf(s), "not a hash");
      expect(await store.idempotency.claim(s, request())).toEqual({ kind: "claimed" });
    });

    it("a lock that ran out frees the key; an answer goes after 24 hours", async () => {
      setUp();
      const s = scope();
      await store.idempotency.claim(s, request());
      const done = scope();
      const r = request();
      await store.idempotency.claim(done, r);
      await store.idempotency.complete(done, r, answer);
      const advance = subject.advanceClock;
      if (advance) {
        advance(LOCK_MS);
        expect(await store.idempotency.claim(done, request())).toMatchObject({ kind: "done" });
        advance(DAY_SECONDS * 1000 - LOCK_MS);
      } else {
        if (!raw.expireNow) throw new Error("a subject without a clock must offer expireNow");
        await raw.expireNow(keyOf(s));
        await raw.expireNow(keyOf(done));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(await store.idempotency.claim(s, request())).toEqual({ kind: "claimed" });
      expect(await store.idempotency.claim(done, request())).toEqual({ kind: "claimed" });
    });
  });
}
