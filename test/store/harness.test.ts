/** The Redis test harness itself: the shared URL, prefixes, and server handles. */
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { startRedisServer } from "../harness/redis-server.js";
import { deleteKeysWithPrefix, redisUrl, uniquePrefix } from "../harness/redis-url.js";

describe("redis test harness", () => {
  it("provides the URL of a reachable Redis (REDIS_URL when given)", async () => {
    const url = redisUrl();
    if (process.env.REDIS_URL) expect(url).toBe(process.env.REDIS_URL);
    else expect(url).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
    const client = new Redis(url);
    try {
      expect(await client.ping()).toBe("PONG");
    } finally {
      client.disconnect();
    }
  });

  it("hands out distinct prefixes and cleans up only its own keys", async () => {
    const [a, b] = [uniquePrefix(), uniquePrefix()];
    expect(a).not.toBe(b);
    expect(a).toMatch(/^t:[0-9a-f]{12}:$/);
    const client = new Redis(redisUrl());
    try {
      await client.set(`${a}one`, "1");
      await client.set(`${a}two`, "2");
      await client.set(`${b}one`, "1");
      expect(await deleteKeysWithPrefix(redisUrl(), a)).toBe(2);
      expect(await client.exists(`${b}one`)).toBe(1);
      await deleteKeysWithPrefix(redisUrl(), b);
      await expect(deleteKeysWithPrefix(redisUrl(), "bl:")).rejects.toThrow(/refusing/);
      await expect(deleteKeysWithPrefix(redisUrl(), "*")).rejects.toThrow(/refusing/);
    } finally {
      client.disconnect();
    }
  });

  it("starts servers on distinct free ports, restarts on the same port, stops idempotently", async () => {
    const [one, two] = await Promise.all([startRedisServer(), startRedisServer()]);
    try {
      expect(one.port).not.toBe(two.port);
      one.kill();
      await one.restart();
      const client = new Redis(one.url, { maxRetriesPerRequest: 1 });
      try {
        expect(await client.ping()).toBe("PONG");
      } finally {
        client.disconnect();
      }
    } finally {
      await one.stop();
      await one.stop();
      await two.stop();
    }
  });
});
