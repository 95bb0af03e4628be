/**
 * `RedisStore.waitUntilReady`: resolves once connected; otherwise rejects as
 * `unavailable` with the reason as `cause` — the last connection error the
 * client saw, or the time-out when the client saw none.
 */
import { createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { silentLogger } from "../../src/log.js";
import { Failure } from "../../src/services/failure.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis/store.js";
import { redisUrl, uniquePrefix } from "../harness/redis-url.js";

let cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

function store(url: string): RedisStore {
  const s = createRedisStore({ mode: "single", url }, { keyPrefix: uniquePrefix(), logger: silentLogger() });
  cleanups.push(() => s.close());
  return s;
}

/** A TCP server on a free port; `close` stops it and drops its connections. */
async function listen(onConnection: (socket: Socket) => void = () => {}): Promise<{ server: Server; port: number }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    onConnection(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no TCP port");
  cleanups.push(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return { server, port: address.port };
}

/** A port where nothing listens (it did a moment ago). */
async function closedPort(): Promise<number> {
  const { server, port } = await listen();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  throw new Error("expected a rejection");
}

describe("waitUntilReady", () => {
  it("resolves once Redis answers", async () => {
    await expect(store(redisUrl()).waitUntilReady(3000)).resolves.toBeUndefined();
  });

  it("rejects with the connection error as cause when nothing listens", async () => {
    const port = await closedPort();
    const e = await rejection(store(`redis://127.0.0.1:${port}`).waitUntilReady(1000));
    expect(e).toBeInstanceOf(Failure);
    expect(e).toMatchObject({ kind: "unavailable" });
    const cause = (e as Failure).cause;
    expect(cause).toBeInstanceOf(Error);
    expect(cause).toMatchObject({ code: "ECONNREFUSED" });
    expect((cause as Error).message).toContain(`127.0.0.1:${port}`);
  });

  it("rejects with the time-out as cause when the client saw no error", async () => {
    // Accepts the connection and never answers: no error within the wait, and never ready.
    const { port } = await listen();
    const e = await rejection(store(`redis://127.0.0.1:${port}`).waitUntilReady(300));
    expect(e).toMatchObject({ kind: "unavailable" });
    expect((e as Failure).cause).toMatchObject({ message: "Redis not ready after 300 ms" });
  });
});
