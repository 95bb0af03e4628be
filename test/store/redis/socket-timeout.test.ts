/**
 * One test per assumption src/store/redis/socket-timeout.ts makes about
 * ioredis's internals (a private method and the fields it reads), so an
 * upgrade that breaks one fails here by name; and the two behaviours it keeps:
 * a hung Redis is still left, a busy loop no longer drops a healthy connection.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { judgeSocketTimeoutAfterReading } from "../../../src/store/redis/socket-timeout.js";
import { type RedisServerHandle, startRedisServer } from "../../harness/redis-server.js";

let redis: RedisServerHandle;
const clients: Redis[] = [];
beforeAll(async () => {
  redis = await startRedisServer();
});
afterAll(async () => {
  for (const c of clients) c.disconnect();
  await redis.stop();
});

function client(socketTimeout: number): Redis {
  const c = new Redis(redis.url, { socketTimeout, maxRetriesPerRequest: 0, retryStrategy: () => null });
  c.on("error", () => {});
  clients.push(c);
  return c;
}

describe("the ioredis internals socket-timeout.ts relies on", () => {
  it("Redis.prototype has a setSocketTimeout method", () => {
    const proto = Redis.prototype as unknown as { setSocketTimeout?: unknown };
    expect(typeof proto.setSocketTimeout).toBe("function");
  });

  it("a connected client with socketTimeout calls it per command, with stream, options.socketTimeout, socketTimeoutTimer and commandQueue", async () => {
    judgeSocketTimeoutAfterReading();
    const c = client(5_000);
    await c.ping();
    const seen: Array<Record<string, unknown>> = [];
    const self = c as unknown as Record<string, unknown> & { setSocketTimeout(): void };
    const original = self.setSocketTimeout;
    self.setSocketTimeout = function (this: typeof self) {
      seen.push({
        stream: typeof (this.stream as { once?: unknown })?.once,
        timeout: (this.options as { socketTimeout?: unknown }).socketTimeout,
        queue: typeof (this.commandQueue as { length?: unknown })?.length,
      });
      original.call(this);
      seen.push({ timer: this.socketTimeoutTimer !== undefined });
    };
    await c.ping();
    expect(seen).toEqual([{ stream: "function", timeout: 5_000, queue: "number" }, { timer: true }]);
  });
});

describe("with the replacement", () => {
  it("a Redis that stops answering is still left after the socket time-out", async () => {
    judgeSocketTimeoutAfterReading();
    const c = client(300);
    await c.ping();
    redis.kill("SIGSTOP");
    try {
      const started = performance.now();
      await expect(c.ping()).rejects.toThrow();
      expect(performance.now() - started).toBeLessThan(3_000);
    } finally {
      redis.kill("SIGCONT");
    }
  });

  it("a loop kept busy past the time-out does not drop a connection whose answer arrived meanwhile", async () => {
    judgeSocketTimeoutAfterReading();
    const c = client(200);
    await c.ping();
    const answer = c.ping();
    const until = performance.now() + 600; // the answer arrives while the loop is busy
    while (performance.now() < until) {
      // busy
    }
    await expect(answer).resolves.toBe("PONG");
    expect(c.status).toBe("ready");
  });
});
