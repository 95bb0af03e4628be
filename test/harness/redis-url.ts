/**
 * What a test needs to talk to the shared test Redis: its URL (from the
 * globalSetup) and a key prefix of its own. Test files run in parallel
 * processes against the same server, so each uses `uniquePrefix()` as its
 * REDIS_KEY_PREFIX and never touches another file's keys.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { inject } from "vitest";

declare module "vitest" {
  interface ProvidedContext {
    /** URL of the Redis the tests use (harness-started, or REDIS_URL). */
    redisUrl: string;
  }
}

export function redisUrl(): string {
  const url = inject("redisUrl");
  if (!url) throw new Error("redisUrl not provided: is test/harness/global-setup.ts the vitest globalSetup?");
  return url;
}

/** A key prefix no other test file uses, e.g. `t:3f9a1c0b2d4e:`. */
export function uniquePrefix(label = "t"): string {
  return `${label}:${randomBytes(6).toString("hex")}:`;
}

/**
 * Deletes every key under `prefix` (for afterAll, so a long-lived REDIS_URL
 * server does not collect test leftovers). Refuses prefixes that could match
 * real data.
 */
export async function deleteKeysWithPrefix(url: string, prefix: string): Promise<number> {
  if (!/^[^*?[\]\\]+:$/.test(prefix) || prefix === "bl:") {
    throw new Error(`refusing to delete keys under prefix ${JSON.stringify(prefix)}`);
  }
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await client.connect();
    let deleted = 0;
    let cursor = "0";
    do {
      const [next, keys] = await client.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
      cursor = next;
      if (keys.length > 0) deleted += await client.unlink(...keys);
    } while (cursor !== "0");
    return deleted;
  } finally {
    client.disconnect();
  }
}
