/**
 * The store contract's part about conversion webhooks: the id → task mapping
 * (`conv-hook:{<id>}`, kept for the retention) and waking a followed task
 * (made due sooner in `conv-due`, never later, never added back once ended).
 * Run inside the store contract (./contract.ts) on every store, after the
 * conversion-follow part, with due times from the same shrinking windows.
 */
import { randomBytes, randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { AdminStore } from "../../src/services/ports.js";
import type { KeySchema } from "../../src/store/schema/keys.js";
import type { ContractSubject, RawAccess } from "./contract.js";
import { dueWindow, finished, task } from "./conversion-contract.js";

const WEEK_SECONDS = 604_800;
const LEASE_MS = 60_000;

export function conversionWebhookContract(current: () => ContractSubject): void {
  let store: AdminStore;
  let keys: KeySchema;
  let raw: RawAccess;
  const setUp = () => ({ store, keys, raw } = current());
  const hookId = () => randomBytes(16).toString("base64url");

  describe("conversion webhooks", () => {
    it("keeps a webhook id's task under conv-hook:{<id>} for the retention", async () => {
      setUp();
      const id = hookId();
      const uuid = randomUUID().replaceAll("-", "");
      await store.conversions.recordWebhook(id, uuid);
      expect(keys.conversionWebhook(id)).toBe(`${keys.prefix}conv-hook:{${id}}`);
      expect(await raw.get(keys.conversionWebhook(id))).toBe(uuid);
      const ttl = await raw.ttl(keys.conversionWebhook(id));
      expect(ttl).toBeGreaterThan(WEEK_SECONDS - 10);
      expect(ttl).toBeLessThanOrEqual(WEEK_SECONDS);
      expect(await store.conversions.webhookTask(id)).toBe(uuid);
      expect(await store.conversions.webhookTask(hookId())).toBeUndefined();
    });

    it("reads a conv-hook key of another type as unknown", async () => {
      setUp();
      const id = hookId();
      await raw.hset(keys.conversionWebhook(id), { uuid: "x" });
      expect(await store.conversions.webhookTask(id)).toBeUndefined();
    });

    it("wakes a followed task: due sooner, never later", async () => {
      setUp();
      const w = dueWindow();
      const uuid = randomUUID();
      await store.conversions.recordConversion(task(uuid), w + 5000);
      expect(await store.conversions.wakeConversion(uuid, w + 10)).toBe(true);
      expect(await raw.zscore(keys.conversionsDue(), uuid)).toBe(w + 10);
      expect(await store.conversions.wakeConversion(uuid, w + 100)).toBe(true);
      expect(await raw.zscore(keys.conversionsDue(), uuid)).toBe(w + 10);
      expect(
        (await store.conversions.claimDueConversions(w + 10, 10, "follower-a", LEASE_MS)).map((t) => t.uuid),
      ).toEqual([uuid]);
      // Leased: waking moves its due time but does not take the lease away.
      expect(await store.conversions.wakeConversion(uuid, w + 1)).toBe(true);
      expect(
        (await store.conversions.claimDueConversions(w + 10, 10, "follower-b", LEASE_MS)).map((t) => t.uuid),
      ).toEqual([]);
      expect(await raw.get(keys.conversionLease(uuid))).toBe("follower-a");
    });

    it("never makes an ended or unknown task due again", async () => {
      setUp();
      const w = dueWindow();
      const uuid = randomUUID();
      await store.conversions.recordConversion(task(uuid), w);
      expect((await store.conversions.claimDueConversions(w, 10, "follower-a", LEASE_MS)).map((t) => t.uuid)).toEqual([
        uuid,
      ]);
      await store.conversions.saveConversionState(uuid, "follower-a", finished, w + 1, undefined);
      expect(await raw.zscore(keys.conversionsDue(), uuid)).toBeUndefined();

      expect(await store.conversions.wakeConversion(uuid, w)).toBe(false);
      expect(await raw.zscore(keys.conversionsDue(), uuid)).toBeUndefined();
      const unknown = randomUUID();
      expect(await store.conversions.wakeConversion(unknown, w)).toBe(false);
      expect(await raw.zscore(keys.conversionsDue(), unknown)).toBeUndefined();
    });
  });
}
