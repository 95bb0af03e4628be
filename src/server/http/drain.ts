/**
 * What a graceful shutdown needs to know: every connection (socket), every
 * HTTP/2 session, the connections not yet handed to a server, and how many
 * requests are in flight. `shutdown` stops new work, lets in-flight requests
 * finish within a grace period, sends HTTP/2 GOAWAY, and then cuts whatever
 * is left.
 */
import type http2 from "node:http2";
import type { Duplex } from "node:stream";
import { eitherEvent, type NodeRequest, type NodeResponse } from "./request-answer.js";

/** How the listener closes its servers; `drain` calls these at the right moments. */
export interface ServerClosers {
  /** Stops accepting; resolves once the listening socket is closed. */
  closeListener(): Promise<void>;
  /** Closes keep-alive HTTP/1.1 connections with no request in flight. */
  closeIdle(): void;
  /** Closes every HTTP/1.1 connection and stops the HTTP/1.1 server's timers. */
  closeAll(): void;
}

export class Drain {
  private readonly sockets = new Set<Duplex>();
  /** Cleartext connections still being sniffed (no server has them yet). */
  private readonly unrouted = new Set<Duplex>();
  private readonly sessions = new Set<http2.Http2Session>();
  private inFlight = 0;
  private drained: (() => void) | undefined;
  draining = false;
  /**
   * The close listeners, one function each for every socket and stream (an emitter calls its
   * listener with itself as `this`) rather than a closure per connection and per request, which an
   * open watch would hold for hours.
   */
  private readonly socketClosed: (this: Duplex) => void;
  private readonly streamClosed: () => void;

  constructor() {
    const drain = this;
    this.socketClosed = function (this: Duplex) {
      drain.sockets.delete(this);
      drain.unrouted.delete(this);
    };
    this.streamClosed = () => this.done();
  }

  socket(socket: Duplex, unrouted = false): void {
    this.sockets.add(socket);
    if (unrouted) this.unrouted.add(socket);
    socket.on("close", this.socketClosed); // fires once (`on`: no wrapper kept for the connection's life)
  }

  routed(socket: Duplex): void {
    this.unrouted.delete(socket);
  }

  session(session: http2.Http2Session): void {
    this.sessions.add(session);
    session.once("close", () => this.sessions.delete(session));
    if (this.draining) session.close();
  }

  /** A request of the compatibility layer (HTTP/1.1 or HTTP/2); the caller calls `answered` when its answer closes. */
  request(req: NodeRequest, res: NodeResponse): void {
    this.inFlight++;
    if (this.draining && req.httpVersionMajor === 1) res.setHeader("connection", "close");
  }

  /** The answer of a `request` closed. */
  answered(res: NodeResponse): void {
    // (a request may have let go of its socket by now: Node sets it to null when it is destroyed)
    if (this.draining && res.req.httpVersionMajor === 1) res.req.socket?.destroySoon?.();
    this.done();
  }

  /** A raw HTTP/2 stream the gRPC fast path took. */
  stream(stream: http2.ServerHttp2Stream): void {
    this.inFlight++;
    stream.on("close", this.streamClosed); // fires once; `once` would keep a wrapper for the stream's life
  }

  async shutdown(graceMs: number, servers: ServerClosers): Promise<void> {
    this.draining = true;
    const deadline = delay(graceMs);
    const closed = servers.closeListener();
    // GOAWAY now; each session closes by itself once its streams are done.
    for (const s of this.sessions) s.close();
    servers.closeIdle();
    const settled = (async () => {
      if (this.inFlight > 0) {
        await new Promise<void>((resolve) => {
          this.drained = resolve;
        });
      }
      // Everything is answered. HTTP/1.1 sockets end once their last answer
      // is flushed (destroySoon), HTTP/2 sessions once their last stream is;
      // idle and never-used connections are closed here. A socket whose
      // writing side has finished has nothing more to say: Node would keep
      // it half-open until the peer closes (an HTTP/2 client may never), so
      // it is cut below without waiting for the grace period.
      servers.closeIdle();
      for (const s of this.unrouted) s.destroy();
      await Promise.all([...this.sockets].map(writingDone));
    })();
    await Promise.race([settled, deadline]);
    // The grace period is over (or everything has closed): cut what is left.
    servers.closeAll();
    for (const s of this.sessions) s.destroy();
    for (const s of this.sockets) s.destroy();
    await closed;
  }

  private done(): void {
    this.inFlight--;
    if (this.draining && this.inFlight === 0) this.drained?.();
  }
}

/** Resolves once the socket has sent everything and its FIN (or is gone). */
function writingDone(socket: Duplex): Promise<void> {
  if (socket.destroyed || socket.writableFinished) return Promise.resolve();
  return eitherEvent(socket, "finish", "close");
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
