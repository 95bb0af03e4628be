/**
 * The order of pipelined HTTP/1.1 requests, without a server: `inTurn` runs a
 * connection's next request only once the answer before it is complete, and
 * never after an answer that closes the connection. (pipelining.test.ts checks
 * the same over real sockets.)
 */
import { EventEmitter } from "node:events";
import { describe, expect, it } from "vitest";
import { inTurn, turnEnded } from "../../../src/server/http/h1-pipelining.js";
import type { NodeRequest, NodeResponse } from "../../../src/server/http/request-answer.js";

interface FakeSocket {
  destroyedSoon: boolean;
  destroySoon(): void;
}

function connection(): FakeSocket {
  return {
    destroyedSoon: false,
    destroySoon() {
      this.destroyedSoon = true;
    },
  };
}

/** A request on `socket` and its answer; `finish` completes the answer, `abort` drops it. */
function exchange(socket: FakeSocket, o: { http2?: boolean; requestSaysClose?: boolean } = {}) {
  const res = Object.assign(new EventEmitter(), {
    writableFinished: false,
    headers: new Map<string, string>(),
    getHeader(name: string) {
      return this.headers.get(name);
    },
  });
  const req = {
    httpVersionMajor: o.http2 ? 2 : 1,
    socket,
    headers: o.requestSaysClose ? { connection: "close" } : {},
  };
  Object.assign(res, { req }); // as Node's answers: `response.req`
  res.on("close", () => turnEnded(res as unknown as NodeResponse)); // as the listener does for every answer
  return {
    req: req as unknown as NodeRequest,
    res: res as unknown as NodeResponse,
    finish(connectionHeader?: string) {
      if (connectionHeader !== undefined) res.headers.set("connection", connectionHeader);
      res.writableFinished = true;
      res.emit("close");
    },
    abort() {
      res.emit("close");
    },
  };
}

describe("inTurn: HTTP/1.1 requests of one connection run one at a time", () => {
  it("runs the next one even when the request before it let go of its socket before its answer closed", () => {
    const socket = connection();
    const ran: number[] = [];
    const calls = [exchange(socket), exchange(socket)];
    calls.forEach((c, i) => {
      inTurn(c.req, c.res, () => ran.push(i));
    });
    (calls[0]?.req as unknown as { socket: unknown }).socket = null; // as Node does when a request is destroyed
    calls[0]?.finish();
    expect(ran).toEqual([0, 1]);
  });

  it("runs the first at once and each next one only after the answer before it is complete", () => {
    const socket = connection();
    const ran: number[] = [];
    const calls = [exchange(socket), exchange(socket), exchange(socket)];
    calls.forEach((c, i) => {
      inTurn(c.req, c.res, () => ran.push(i));
    });
    expect(ran).toEqual([0]);
    calls[0]?.finish();
    expect(ran).toEqual([0, 1]);
    calls[1]?.finish();
    expect(ran).toEqual([0, 1, 2]);
    calls[2]?.finish();
    expect(socket.destroyedSoon).toBe(false);
  });

  it.each([
    { who: "an answer that says", requestSaysClose: false, answerSays: "close" },
    { who: "a request that said", requestSaysClose: true, answerSays: undefined },
  ])("runs nothing after $who Connection: close, and closes the connection", (o) => {
    const socket = connection();
    const ran: number[] = [];
    const first = exchange(socket, { requestSaysClose: o.requestSaysClose });
    const second = exchange(socket);
    inTurn(first.req, first.res, () => ran.push(0));
    inTurn(second.req, second.res, () => ran.push(1));
    first.finish(o.answerSays);
    expect(ran).toEqual([0]);
    expect(socket.destroyedSoon).toBe(true);
  });

  it("runs nothing after an answer that never completed", () => {
    const socket = connection();
    const ran: number[] = [];
    const first = exchange(socket);
    const second = exchange(socket);
    inTurn(first.req, first.res, () => ran.push(0));
    inTurn(second.req, second.res, () => ran.push(1));
    first.abort();
    expect(ran).toEqual([0]);
  });

  it("keeps connections apart: a request waits only for its own connection", () => {
    const [a, b] = [connection(), connection()];
    const ran: string[] = [];
    const [a1, a2, b1] = [exchange(a), exchange(a), exchange(b)];
    inTurn(a1.req, a1.res, () => ran.push("a1"));
    inTurn(a2.req, a2.res, () => ran.push("a2"));
    inTurn(b1.req, b1.res, () => ran.push("b1"));
    expect(ran).toEqual(["a1", "b1"]);
  });

  it("does not queue HTTP/2 streams: they run at once", () => {
    const socket = connection();
    const ran: number[] = [];
    const [first, second] = [exchange(socket, { http2: true }), exchange(socket, { http2: true })];
    inTurn(first.req, first.res, () => ran.push(0));
    inTurn(second.req, second.res, () => ran.push(1));
    expect(ran).toEqual([0, 1]);
  });
});

describe("what closeAfterAnswer assumes of Node's HTTP/1.1 server", () => {
  it("closes a connection after an answer with Connection: close by calling the socket's destroySoon", async () => {
    const http = await import("node:http");
    let called = false;
    const server = http.createServer((req, res) => {
      const socket = req.socket;
      const original = socket.destroySoon.bind(socket);
      socket.destroySoon = () => {
        called = true;
        original();
      };
      res.setHeader("connection", "close");
      res.end("bye");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    try {
      const res = await fetch(`http://127.0.0.1:${port}/`);
      expect(await res.text()).toBe("bye");
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(called).toBe(true);
    } finally {
      server.close();
    }
  });
});
