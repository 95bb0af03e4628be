/**
 * The stores' `retentionSeconds` setting: how long a conversion task's record
 * and its changes stream outlive the task's last change, and how long its
 * webhook id is kept (default 7 days, which the store contract checks).
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../src/log.js";
import type { AdminStore } from "../../src/services/ports.js";
import type { KeySchema } from "../../src/store/schema/keys.js";
import { MemoryStore } from "../../src/store/memory/store.js";
import { createRedisStore } from "../../src/store/redis/store.js";
import { deleteKeysWithPrefix, redisUrl, uniquePrefix } from "../harness/redis-url.js";
import { conversion } from "./contract.js";
import { memoryRaw } from "./memory-raw.js";

/** Records a task, saves one change, maps a webhook id to it: the TTLs (s) of the record (new, then changed), its changes and the id. */
async function ttlsAfterAChange(
  store: AdminStore & { keys: KeySchema },
  ttl: (key: string) => Promise<number>,
): Promise<number[]> {
  const uuid = randomUUID();
  await store.conversions.recordConversion(conversion(uuid), 1000);
  const recorded = await ttl(store.keys.conversion(uuid));
  expect((await store.conversions.claimDueConversions(1000, 1, "follower", 60_000)).map((t) => t.uuid)).toEqual([uuid]);
  const state = { status: "Converting", percent: 10, pages: [] } as const;
  expect(await store.conversions.saveConversionState(uuid, "follower", state, 2000, undefined)).toBe("changed");
  await store.conversions.recordWebhook("hook", uuid);
  return [
    recorded,
    await ttl(store.keys.conversion(uuid)),
    await ttl(store.keys.conversionChanges(uuid)),
    await ttl(store.keys.conversionWebhook("hook")),
  ];
}

describe("retentionSeconds", () => {
  it("sets the memory store's conversion expiry", async () => {
    const store = new MemoryStore({ retentionSeconds: 90 });
    const raw = memoryRaw(store.data);
    for (const ttl of await ttlsAfterAChange(store, (key) => raw.ttl(key))) expect(ttl).toBe(90);
  });

  it("sets the Redis store's conversion expiry", async () => {
    const keyPrefix = uniquePrefix();
    const store = createRedisStore(
      { mode: "single", url: redisUrl() },
      { keyPrefix, logger: silentLogger(), retentionSeconds: 90 },
    );
    const client = new Redis(redisUrl());
    try {
      await store.waitUntilReady();
      for (const ttl of await ttlsAfterAChange(store, (key) => client.ttl(key))) {
        expect(ttl).toBeGreaterThan(85);
        expect(ttl).toBeLessThanOrEqual(90);
      }
    } finally {
      client.disconnect();
      await store.close();
      await deleteKeysWithPrefix(redisUrl(), keyPrefix);
    }
  });
});
