/**
 * The CLI's Redis session in-process: it names an unreachable Redis by the
 * connection error the store's readiness wait carries as `cause`, and never
 * shows credentials. (test/cli/records-the-server-reads.test.ts runs the built CLI end to end.)
 */
import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { CliFailure } from "../../src/cli/cli-failure.js";
import { describeRedis, withStore } from "../../src/cli/redis-session.js";
import { redisUrl, uniquePrefix } from "../harness/redis-url.js";

/** A port where nothing listens (it did a moment ago). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === "string") throw new Error("no TCP port");
  return address.port;
}

describe("withStore", () => {
  it("runs the work against the configured Redis", async () => {
    const env = { REDIS_URL: redisUrl(), REDIS_KEY_PREFIX: uniquePrefix("cli") };
    expect(await withStore((store) => store.getMuteState("p", "c"), env)).toEqual({});
  });

  it("names an unreachable Redis by its connection error, without credentials", async () => {
    const port = await closedPort();
    let ran = false;
    const failure = withStore(
      async () => {
        ran = true;
      },
      { REDIS_URL: `redis://user:hunter2@127.0.0.1:${port}` },
    );
    await expect(failure).rejects.toBeInstanceOf(CliFailure);
    const message = await failure.catch((e: Error) => e.message);
    expect(message).toMatch(new RegExp(`^cannot reach Redis at redis://127\\.0\\.0\\.1:${port}: .*ECONNREFUSED`));
    expect(message).not.toContain("hunter2");
    expect(ran).toBe(false);
  });

  it("refuses to run without Redis configured", async () => {
    await expect(withStore(async () => {}, {})).rejects.toThrow(/^no Redis configured: set REDIS_URL/);
  });
});

describe("describeRedis", () => {
  it("says where Redis is without credentials", () => {
    expect(describeRedis({ mode: "single", url: "rediss://u:secret@cache.example:6380/2" })).toBe(
      "rediss://cache.example:6380/2",
    );
    expect(
      describeRedis({
        mode: "cluster",
        nodes: [
          { host: "a", port: 7000 },
          { host: "::1", port: 7001 },
        ],
        password: "secret",
      }),
    ).toBe("cluster a:7000,[::1]:7001");
    expect(
      describeRedis({ mode: "sentinel", masterName: "main", sentinels: [{ host: "s1", port: 26379 }], password: "x" }),
    ).toBe("sentinel master main via s1:26379");
  });
});
