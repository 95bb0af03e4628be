/**
 * The Redis store sends the commands of one event-loop turn in one write
 * (src/store/redis/write-coalescing.ts). Each test runs its own redis-server, so
 * Redis's own read counter sees this file's traffic and nothing else.
 */
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { Failure } from "../../src/services/failure.js";
import { createRedisClient, DEFAULT_TUNING } from "../../src/store/redis/connection.js";
import { RedisStore } from "../../src/store/redis/store.js";
import { eventually } from "../harness/eventually.js";
import { startRedisServer } from "../harness/redis-server.js";
import { uniquePrefix } from "../harness/redis-url.js";

let cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function setup() {
  const server = await startRedisServer();
  const client = createRedisClient({ mode: "single", url: server.url }, DEFAULT_TUNING);
  const store = new RedisStore(client, { keyPrefix: uniquePrefix(), logger: createLogger("silent") });
  const observer = new Redis(server.url, { maxRetriesPerRequest: 1 });
  cleanups.push(async () => {
    observer.disconnect();
    await store.close();
    await server.stop();
  });
  await store.waitUntilReady();
  await observer.ping();
  /** Socket reads Redis has done so far (for every client; this INFO's own read included). */
  const reads = async () => Number(/total_reads_processed:(\d+)/.exec(await observer.info("stats"))?.[1]);
  return { store, client, reads };
}

const mute = (uid: string, on = true) => ({ project: "p", channel: "c", uid, mute: on, by: "s", at: 1 });

describe("Redis write coalescing", () => {
  it("sends the commands issued in one turn in a single write, and every one of them lands", async () => {
    const { store, reads } = await setup();
    const before = await reads();
    const uids = Array.from({ length: 50 }, (_, i) => `u${i}`);
    await Promise.all(uids.map((uid, i) => store.setMute(mute(uid, i % 2 === 0))));
    const after = await reads();
    // One read for the 50 commands, one for the INFO that counts them.
    expect(after - before).toBe(2);
    const state = await store.getMuteState("p", "c");
    expect(state).toEqual(Object.fromEntries(uids.map((uid, i) => [uid, i % 2 === 0])));
    expect(await store.getMuteEvents("p", "c", 100)).toHaveLength(50);
  });

  it("does not hold a command back past its turn: a lone call is answered as before", async () => {
    const { store, reads } = await setup();
    const before = await reads();
    for (let i = 0; i < 5; i++) await store.setMute(mute(`solo${i}`));
    expect((await reads()) - before).toBe(6);
    expect(Object.keys(await store.getMuteState("p", "c"))).toHaveLength(5);
  });

  it("fails held commands as unavailable when the connection drops before the write, and sends nothing late", async () => {
    const { store, client } = await setup();
    const started = performance.now();
    const pending = store.setMute(mute("lost"));
    // Same turn: the command still sits in the corked socket.
    (client as Redis).stream.destroy();
    const error = await pending.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Failure);
    expect((error as Failure).kind).toBe("unavailable");
    expect(performance.now() - started).toBeLessThan(1100);
    // Serving again after the reconnect; the lost command never reached Redis.
    await eventually(
      () =>
        store.ping().then(
          () => true,
          () => false,
        ),
      2_000,
      "the store to answer again",
    );
    expect(await store.getMuteState("p", "c")).toEqual({});
  });
});
