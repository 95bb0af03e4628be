/**
 * HTTP/1.1 pipelining, one request at a time, and the end of a connection
 * that an answer closes. Node's HTTP/1.1 server hands over every request it
 * parses at once, even one pipelined behind a request still being answered;
 * responses go out in order anyway. Here the next request of a connection
 * runs only once the previous answer is complete, and never after an answer
 * that closes the connection (RFC 9112 §9.6): a mute pipelined behind a
 * refused body must not run unseen.
 *
 * "Never" by construction: a connection is marked closing as soon as an
 * answer on it says `Connection: close` (`closeAfterAnswer`, or when the turn
 * ends), and no request of a marked connection ever runs, however its bytes
 * were cut into TCP segments — one that arrives after the answer finished
 * included (it would otherwise find no turn in progress and look like the
 * first request of the connection).
 *
 * A refused body may still be on the wire when its answer is written. Node
 * destroys the socket (`destroySoon`) as soon as the answer is flushed, and
 * closing a socket with unread input makes the kernel send RST, which can
 * discard the answer before the client reads it. So a connection closed by
 * `closeAfterAnswer` lingers: its write side ends after the answer, its input
 * is still read (and whatever requests it holds are never run) until the
 * client closes its side or `LINGER_MS` pass. This replaces Node's
 * `socket.destroySoon` on that one socket, the method Node's HTTP server calls
 * to close a connection after an answer that ends it
 * (test/server/http/pipelining.test.ts holds it to that).
 */
import type { Socket } from "node:net";
import type { NodeRequest, NodeResponse } from "./request-answer.js";

/** How long a closed connection keeps reading what the client still sends (a refused body). */
export const LINGER_MS = 2_000;

interface Turn {
  readonly req: NodeRequest;
  readonly res: NodeResponse;
  readonly run: () => void;
}

/** Connections with a request being answered, each with the requests waiting behind it. */
const waiting = new WeakMap<Socket, Turn[]>();
/** Connections an answer has closed: nothing on them runs any more. */
const closing = new WeakSet<Socket>();

/**
 * Runs `run` now, or once the requests before it on the same HTTP/1.1 connection are answered. The
 * caller calls `turnEnded` when the answer closes (listener.ts: one close listener per answer does
 * everything an answer's close means, rather than one listener per concern).
 */
export function inTurn(req: NodeRequest, res: NodeResponse, run: () => void): void {
  if (req.httpVersionMajor !== 1) {
    run();
    return;
  }
  if (closing.has(req.socket)) return; // behind an answer that closed the connection: never runs
  const queue = waiting.get(req.socket);
  if (queue !== undefined) {
    queue.push({ req, res, run });
    return;
  }
  waiting.set(req.socket, []);
  start({ req, res, run });
}

/**
 * The answer about to be written to `req` ends its HTTP/1.1 connection
 * (e.g. a body refused unread): says `Connection: close`, runs nothing after
 * it, and lets the connection linger so the client gets the answer.
 */
export function closeAfterAnswer(req: NodeRequest, res: NodeResponse): void {
  if (req.httpVersionMajor !== 1) return;
  res.setHeader("connection", "close");
  const socket = req.socket as Socket;
  if (closing.has(socket)) return;
  closing.add(socket);
  socket.destroySoon = () => linger(socket);
}

function linger(socket: Socket): void {
  if (socket.writable) socket.end();
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once("close", () => clearTimeout(timer));
  socket.once("end", () => socket.destroy()); // the client closed its side: it has what it will read
}

/** The connection of each answer under way: its request may have let go of the socket by the time it closes. */
const connectionOf = new WeakMap<NodeResponse, Socket>();

function start(turn: Turn): void {
  connectionOf.set(turn.res, turn.req.socket as Socket); // the turn itself is not kept
  turn.run();
}

/**
 * An answer closed: if it was a turn's, the next request of its connection runs, unless the answer
 * closed the connection. Any other answer (an HTTP/2 one, one still waiting for its turn) changes nothing.
 */
export function turnEnded(res: NodeResponse): void {
  const socket = connectionOf.get(res);
  if (socket === undefined) return;
  connectionOf.delete(res);
  const queue = waiting.get(socket) ?? [];
  const closes = closesConnection(res.req, res);
  if (closes) closing.add(socket);
  const next = closes ? undefined : queue.shift();
  if (next === undefined) {
    waiting.delete(socket);
    if (queue.length > 0) socket.destroySoon(); // requests behind a closing answer never run
    return;
  }
  start(next);
}

/** The answer ended the connection, or did not complete: nothing after it may run. */
function closesConnection(req: NodeRequest, res: NodeResponse): boolean {
  if (!res.writableFinished) return true;
  const said = (v: unknown) => typeof v === "string" && /(^|,)\s*close\s*(,|$)/i.test(v);
  return said(res.getHeader("connection")) || said(req.headers.connection);
}
