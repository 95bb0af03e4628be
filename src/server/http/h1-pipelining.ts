/**
 * HTTP/1.1 pipelining, one request at a time. Node's HTTP/1.1 server hands
 * over every request it parses at once, even one pipelined behind a request
 * still being answered; responses go out in order anyway. Here the next
 * request of a connection runs only once the previous answer is complete,
 * and never after an answer that closes the connection (RFC 9112 §9.6):
 * a mute pipelined behind a refused body must not run unseen.
 */
import type { Socket } from "node:net";
import type { NodeRequest, NodeResponse } from "./request-answer.js";

interface Turn {
  readonly req: NodeRequest;
  readonly res: NodeResponse;
  readonly run: () => void;
}

/** Connections with a request being answered, each with the requests waiting behind it. */
const waiting = new WeakMap<Socket, Turn[]>();

/** Runs `run` now, or once the requests before it on the same HTTP/1.1 connection are answered. */
export function inTurn(req: NodeRequest, res: NodeResponse, run: () => void): void {
  if (req.httpVersionMajor !== 1) {
    run();
    return;
  }
  const queue = waiting.get(req.socket);
  if (queue !== undefined) {
    queue.push({ req, res, run });
    return;
  }
  waiting.set(req.socket, []);
  start({ req, res, run });
}

function start(turn: Turn): void {
  const socket = turn.req.socket;
  turn.res.once("close", () => {
    const queue = waiting.get(socket) ?? [];
    const next = closesConnection(turn) ? undefined : queue.shift();
    if (next === undefined) {
      waiting.delete(socket);
      if (queue.length > 0) socket.destroySoon(); // requests behind a closing answer never run
      return;
    }
    start(next);
  });
  turn.run();
}

/** The answer ended the connection, or did not complete: nothing after it may run. */
function closesConnection({ req, res }: Turn): boolean {
  if (!res.writableFinished) return true;
  const said = (v: unknown) => typeof v === "string" && /(^|,)\s*close\s*(,|$)/i.test(v);
  return said(res.getHeader("connection")) || said(req.headers.connection);
}
