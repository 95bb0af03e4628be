/**
 * The Redis store while Redis misbehaves: killed, frozen, absent at start-up.
 * Each test runs its own redis-server (never the shared one) so it can kill it.
 * Requirements: every call answers within about a second (as `unavailable`),
 * and service is back within two seconds of Redis being back.
 */
import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { Failure } from "../../src/services/failure.js";
import type { AdminStore } from "../../src/services/ports.js";
import { hashPassphrase } from "../../src/store/schema/keys.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis/store.js";
import { type RedisServerHandle, startRedisServer } from "../harness/redis-server.js";
import { uniquePrefix } from "../harness/redis-url.js";

const ANSWER_WITHIN_MS = 1100; // 1 s command timeout plus scheduling slack
const RECOVER_WITHIN_MS = 2000;

let cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function setup(): Promise<{ server: RedisServerHandle; store: RedisStore; logs: () => string }> {
  const server = await startRedisServer();
  let logged = "";
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logged += chunk.toString("utf8");
      done();
    },
  });
  const store = createRedisStore(
    { mode: "single", url: server.url },
    { keyPrefix: uniquePrefix(), logger: createLogger("debug", sink) },
  );
  cleanups.push(async () => {
    server.kill("SIGCONT"); // in case a test froze it
    await store.close();
    await server.stop();
  });
  return { server, store, logs: () => logged };
}

/** Runs `call`, returning how long it took and what it threw (if anything). */
async function timed(call: () => Promise<unknown>): Promise<{ ms: number; error: unknown }> {
  const started = performance.now();
  try {
    await call();
    return { ms: performance.now() - started, error: undefined };
  } catch (error) {
    return { ms: performance.now() - started, error };
  }
}

/** Polls `ping` until it succeeds; returns the milliseconds that took. */
async function msUntilServing(store: AdminStore, limitMs: number): Promise<number> {
  const started = performance.now();
  for (;;) {
    try {
      await store.ping();
      return performance.now() - started;
    } catch {
      if (performance.now() - started > limitMs) return Number.POSITIVE_INFINITY;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
}

function expectUnavailable(result: { ms: number; error: unknown }): void {
  expect(result.error).toBeInstanceOf(Failure);
  expect((result.error as Failure).kind).toBe("unavailable");
  expect(result.ms).toBeLessThan(ANSWER_WITHIN_MS);
}

/** A mixed request-path load: lookups, mutes, conversions, pings. */
function requestLoad(store: AdminStore, passphrase: string, n: number): Array<() => Promise<unknown>> {
  return Array.from({ length: n }, (_, i) => {
    switch (i % 4) {
      case 0:
        return () => store.lookupPassphrase("p", passphrase);
      case 1:
        return () => store.setMute({ project: "p", channel: "c", uid: `u${i}`, mute: true, by: "s", at: Date.now() });
      case 2:
        return () => store.getWhiteboard("p");
      default:
        return () => store.ping();
    }
  });
}

describe("RedisStore under Redis faults", () => {
  it("answers every call fast while Redis is killed under load, and recovers within 2 s of a restart", async () => {
    const { server, store, logs } = await setup();
    await store.waitUntilReady();
    const passphrase = "correct horse battery staple";
    await store.createChannel({ project: "p", channel: "c", hostPassphrase: passphrase });

    // Load in flight while the server dies.
    const inFlight = requestLoad(store, passphrase, 400).map((call) => timed(call));
    server.kill("SIGKILL");
    const during = await Promise.all(inFlight);
    for (const result of during) {
      expect(result.ms).toBeLessThan(ANSWER_WITHIN_MS);
      if (result.error !== undefined) expectUnavailable(result);
    }

    // Calls made while it is down.
    for (let round = 0; round < 3; round++) {
      const results = await Promise.all(requestLoad(store, passphrase, 100).map((call) => timed(call)));
      for (const result of results) expectUnavailable(result);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }

    await server.restart();
    expect(await msUntilServing(store, 5000)).toBeLessThan(RECOVER_WITHIN_MS);

    // Empty again (no persistence), and the mute script loads itself anew.
    expect(await store.lookupPassphrase("p", passphrase)).toBeUndefined();
    await store.setMute({ project: "p", channel: "c", uid: "u", mute: true, by: "s", at: 1 });
    expect(await store.getMuteState("p", "c")).toEqual({ u: true });

    const logged = logs();
    // One warning for the outage (not one per failed call), one note for the return.
    expect(logged.match(/requests fail with 503 until it is back/g)).toHaveLength(1);
    expect(logged).toContain("Redis connection back");
    expect(logged).not.toContain(passphrase);
    expect(logged).not.toContain(hashPassphrase(passphrase));
  });

  it("answers within the command timeout while Redis is frozen, and recovers when it thaws", async () => {
    const { server, store } = await setup();
    await store.waitUntilReady();

    server.kill("SIGSTOP");
    const results = await Promise.all(requestLoad(store, "x", 40).map((call) => timed(call)));
    for (const result of results) expectUnavailable(result);

    server.kill("SIGCONT");
    expect(await msUntilServing(store, 5000)).toBeLessThan(RECOVER_WITHIN_MS);
  });

  it("starts without Redis, fails fast meanwhile, and serves within 2 s once Redis appears", async () => {
    const { server, store } = await setup();
    await server.stop();
    // A fresh store that has never seen this server.
    const late = createRedisStore(
      { mode: "single", url: server.url },
      { keyPrefix: uniquePrefix(), logger: createLogger("silent") },
    );
    cleanups.push(() => late.close());
    await new Promise((resolve) => setTimeout(resolve, 1500)); // let the back-off reach its cap

    expectUnavailable(await timed(() => late.lookupPassphrase("p", "x")));
    await expect(late.waitUntilReady(200)).rejects.toMatchObject({ kind: "unavailable" });

    await server.restart();
    expect(await msUntilServing(late, 5000)).toBeLessThan(RECOVER_WITHIN_MS);
    // The store that saw the server go away recovers too.
    expect(await msUntilServing(store, 5000)).toBeLessThan(RECOVER_WITHIN_MS);
  });

  it("cluster and sentinel modes also answer unavailable at once when nothing is reachable", async () => {
    const server = await startRedisServer();
    const port = server.port;
    await server.stop(); // a port where nothing listens
    const stores = [
      createRedisStore(
        { mode: "cluster", nodes: [{ host: "127.0.0.1", port }], password: "secret" },
        { logger: createLogger("silent") },
      ),
      createRedisStore(
        { mode: "sentinel", sentinels: [{ host: "127.0.0.1", port }], masterName: "mymaster" },
        { logger: createLogger("silent") },
      ),
    ];
    try {
      for (const store of stores) {
        expectUnavailable(await timed(() => store.lookupPassphrase("p", "x")));
        expectUnavailable(
          await timed(() => store.setMute({ project: "p", channel: "c", uid: "u", mute: true, by: "s", at: 1 })),
        );
        expectUnavailable(await timed(() => store.deleteChannel("p", "c")));
      }
    } finally {
      await Promise.all(stores.map((s) => s.close()));
    }
  });
});
