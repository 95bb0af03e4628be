/** The Redis test harness itself: the shared URL, prefixes, and server handles. */
import { createConnection } from "node:net";
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { startRedisServer } from "../harness/redis-server.js";
import { deleteKeysWithPrefix, redisUrl, uniquePrefix } from "../harness/redis-url.js";

describe("redis test harness", () => {
  it("provides the URL of a reachable Redis (REDIS_URL when given)", async () => {
    // The global setup treats an empty REDIS_URL as none, and then starts a server on loopback.
    const given = process.env.REDIS_URL;
    const harnessStarted = expect.stringMatching(/^redis:\/\/127\.0\.0\.1:\d+$/);
    const url = redisUrl();
    expect(url).toEqual(given === undefined || given === "" ? harnessStarted : given);
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
      expect(await client.exists(`${a}one`, `${a}two`)).toBe(0);
      expect(await client.exists(`${b}one`)).toBe(1);
      expect(await deleteKeysWithPrefix(redisUrl(), b)).toBe(1);
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
      expect(await pong(one.url)).toBe("PONG");
      expect(await pong(two.url)).toBe("PONG");
      one.kill();
      // kill does not wait: wait for the port to refuse connections.
      await eventually(async () => !(await accepts(one.port)), 5_000, "the killed server's port to close");
      await one.restart();
      expect(await pong(one.url)).toBe("PONG");
      await one.stop();
      expect(await accepts(one.port)).toBe(false);
      await one.stop();
      expect(await accepts(one.port)).toBe(false);
      expect(await pong(two.url)).toBe("PONG");
    } finally {
      await one.stop();
      await two.stop();
    }
    expect(await accepts(two.port)).toBe(false);
  });
});

/** PING's answer from the server at `url`. */
async function pong(url: string): Promise<string> {
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    return await client.ping();
  } finally {
    client.disconnect();
  }
}

/** Whether anything accepts a TCP connection on the loopback `port`. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: "127.0.0.1", port });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}
