/**
 * The connection sniffer (src/server/http/connection-sniffer.ts) drops a client
 * that sends nothing in time, but not one whose bytes came in time while the
 * event loop was blocked past the deadline: the timer's turn comes before the
 * loop reads sockets, so the drop waits for that read.
 */
import { type ChildProcess, spawn } from "node:child_process";
import net from "node:net";
import { afterEach, expect, test } from "vitest";
import { sniff } from "../../../src/server/http/connection-sniffer.js";

const TIMEOUT_MS = 200;
let server: net.Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

function blockLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // a busy event loop, as a burst of work makes it
  }
}

/** Sniffs every connection of a new server; `blockMs`: then blocks the loop that long at once. */
async function sniffing(o: { blockMs: number }): Promise<{ port: number; routed: Promise<boolean | "dropped"> }> {
  let settle!: (r: boolean | "dropped") => void;
  const routed = new Promise<boolean | "dropped">((resolve) => {
    settle = resolve;
  });
  const listening = net.createServer((socket) => {
    socket.on("close", () => settle("dropped"));
    socket.on("error", () => {});
    sniff(socket, TIMEOUT_MS, (isH2) => {
      settle(isH2);
      socket.destroy();
    });
    blockLoop(o.blockMs);
  });
  server = listening;
  await new Promise<void>((resolve) => listening.listen(0, "127.0.0.1", () => resolve()));
  return { port: (listening.address() as net.AddressInfo).port, routed };
}

/** A client in a process of its own (it writes while this one's loop is blocked): connects, writes `bytes`, waits. */
function client(port: number, bytes: string | undefined): ChildProcess {
  const script = `const s = require("node:net").connect(${port}, "127.0.0.1", () => { ${
    bytes === undefined ? "" : `s.write(${JSON.stringify(bytes)});`
  } }); s.on("error", () => {}); s.on("close", () => process.exit(0)); setTimeout(() => process.exit(0), 5000);`;
  return spawn(process.execPath, ["-e", script], { stdio: "ignore" });
}

test("bytes that came in time are routed even when the event loop was blocked past the deadline", async () => {
  const { port, routed } = await sniffing({ blockMs: TIMEOUT_MS * 2 });
  const c = client(port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  expect(await routed).toBe(false); // HTTP/1.1, routed, not dropped
  c.kill();
});

test("an HTTP/2 preface is told apart", async () => {
  const { port, routed } = await sniffing({ blockMs: 0 });
  const c = client(port, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
  expect(await routed).toBe(true);
  c.kill();
});

test("a client that sends nothing is dropped after the deadline", async () => {
  const { port, routed } = await sniffing({ blockMs: 0 });
  const started = performance.now();
  const c = client(port, undefined);
  expect(await routed).toBe("dropped");
  expect(performance.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);
  c.kill();
});
