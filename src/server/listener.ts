/**
 * One port for everything. Cleartext: each new connection is sniffed — the
 * HTTP/2 connection preface ("PRI * HTTP/2.0…", gRPC's prior knowledge) goes
 * to an HTTP/2 server, anything else to an HTTP/1.1 server. TLS: ALPN picks h2
 * or http/1.1. Both servers share one request listener.
 *
 * The boring production details are on by default: a deadline for the first
 * bytes and for the request headers, a header size limit, and a graceful
 * shutdown that stops accepting, lets in-flight requests finish (up to a grace
 * period), sends HTTP/2 GOAWAY, and only then lets the caller close Redis.
 */
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type { Duplex } from "node:stream";
import type { NodeRequest, NodeResponse } from "./rpc-handler.js";

export interface ListenOptions {
  readonly host: string;
  readonly port: number;
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer };
  /** Time for a client to send its first bytes and its request headers. */
  readonly headersTimeoutMs?: number;
  /** Largest header block accepted, in bytes. */
  readonly maxHeaderBytes?: number;
  /** Connections with no request in flight for this long are closed. */
  readonly idleTimeoutMs?: number;
  /**
   * Sees every HTTP/2 stream first; returns true when it has taken the stream
   * (the gRPC fast path), false to let it go to the request listener.
   */
  readonly onStream?: (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => boolean;
}

export interface RunningServer {
  readonly port: number;
  readonly url: string;
  /** Stops accepting, waits for in-flight requests up to `graceMs`, then closes every connection. */
  shutdown(graceMs: number): Promise<void>;
}

type Listener = (req: NodeRequest, res: NodeResponse) => void;

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

export async function listen(options: ListenOptions, onRequest: Listener): Promise<RunningServer> {
  const headersTimeout = options.headersTimeoutMs ?? 10_000;
  const maxHeaderSize = options.maxHeaderBytes ?? 16 * 1024;
  const idleTimeout = options.idleTimeoutMs ?? 60_000;
  const sockets = new Set<Duplex>();
  /** Cleartext connections still being sniffed (no server has them yet). */
  const unrouted = new Set<Duplex>();
  const sessions = new Set<http2.Http2Session>();
  let inFlight = 0;
  let draining = false;
  let drained: (() => void) | undefined;

  const tracked: Listener = (req, res) => {
    inFlight++;
    res.once("close", () => {
      inFlight--;
      if (draining) {
        if (req.httpVersionMajor === 1) req.socket.destroySoon?.();
        if (inFlight === 0) drained?.();
      }
    });
    if (draining && req.httpVersionMajor === 1) res.setHeader("connection", "close");
    onRequest(req, res);
  };

  const h1Limits = {
    maxHeaderSize,
    headersTimeout,
    requestTimeout: 5 * 60_000,
    keepAliveTimeout: 5_000,
    // The timeouts are only as precise as this check.
    connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(headersTimeout / 4))),
  };
  const h2Options: http2.ServerOptions = {
    maxHeaderListPairs: 128,
    maxSessionMemory: 16,
    settings: { maxHeaderListSize: maxHeaderSize, maxConcurrentStreams: 256 },
  };
  /**
   * Puts `onStream` in front of Node's HTTP/2 compatibility layer (the "stream"
   * listener that the request listener installed), so a stream it takes never
   * pays for the compatibility request/response objects.
   */
  const takeStreams = (server: http2.Http2Server | http2.Http2SecureServer) => {
    const take = options.onStream;
    if (take === undefined) return;
    const compat = server.listeners("stream") as Array<(...args: unknown[]) => void>;
    server.removeAllListeners("stream");
    server.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, ...rest: unknown[]) => {
      if (take(stream, headers)) {
        inFlight++;
        stream.once("close", () => {
          inFlight--;
          if (draining && inFlight === 0) drained?.();
        });
        return;
      }
      for (const listener of compat) listener.call(server, stream, headers, ...rest);
    });
  };
  const onSession = (session: http2.Http2Session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
    session.setTimeout(idleTimeout, () => session.close());
    if (draining) session.close();
  };

  let outer: net.Server;
  let h1: http.Server | undefined;
  if (options.tls !== undefined) {
    const secure = http2.createSecureServer(
      {
        ...h2Options,
        cert: options.tls.cert,
        key: options.tls.key,
        allowHTTP1: true,
        handshakeTimeout: headersTimeout,
      },
      tracked as never,
    );
    // The HTTP/1.1 fallback of a secure HTTP/2 server reads its limits off the
    // server object (Node's defaults: 60 s headers timeout, checked every 30 s,
    // no keep-alive timeout), not off the options: set them here.
    Object.assign(secure, h1Limits);
    secure.on("clientError", answerClientError);
    secure.on("session", onSession);
    takeStreams(secure);
    secure.on("secureConnection", (s: Duplex) => trackSocket(sockets, s));
    outer = secure;
  } else {
    h1 = http.createServer(h1Limits, tracked);
    h1.on("clientError", answerClientError);
    // This server never listens itself (the sniffer hands it connections), but
    // Node only starts its connection tracking — which enforces the headers
    // and request timeouts and which closeIdleConnections() and
    // closeAllConnections() rely on — on "listening".
    h1.emit("listening");
    const h2 = http2.createServer(h2Options, tracked as never);
    h2.on("session", onSession);
    takeStreams(h2);
    const toH1 = h1;
    outer = net.createServer({ noDelay: true }, (socket) => {
      trackSocket(sockets, socket);
      trackSocket(unrouted, socket);
      sniff(socket, headersTimeout, (isH2) => {
        unrouted.delete(socket);
        (isH2 ? h2 : toH1).emit("connection", socket);
      });
    });
  }
  outer.on("error", () => {});
  const closeIdle = () => {
    if (h1 !== undefined) h1.closeIdleConnections();
    // Node's secure HTTP/2 server has it (for its HTTP/1.1 fallback); @types/node 20 does not say so.
    else (outer as unknown as { closeIdleConnections(): void }).closeIdleConnections();
  };

  await new Promise<void>((resolve, reject) => {
    outer.once("error", reject);
    outer.listen(options.port, options.host, () => {
      outer.off("error", reject);
      resolve();
    });
  });
  const address = outer.address() as net.AddressInfo;
  const scheme = options.tls === undefined ? "http" : "https";
  const hostForUrl = address.family === "IPv6" ? `[${address.address}]` : address.address;

  return {
    port: address.port,
    url: `${scheme}://${hostForUrl}:${address.port}`,
    async shutdown(graceMs: number) {
      draining = true;
      const deadline = delay(graceMs);
      const closed = new Promise<void>((resolve) => outer.close(() => resolve()));
      // GOAWAY now; each session closes by itself once its streams are done.
      for (const s of sessions) s.close();
      closeIdle();
      const settled = (async () => {
        if (inFlight > 0) {
          await new Promise<void>((resolve) => {
            drained = resolve;
          });
        }
        // Everything is answered. HTTP/1.1 sockets end once their last answer
        // is flushed (destroySoon), HTTP/2 sessions once their last stream is;
        // idle and never-used connections are closed here. A socket whose
        // writing side has finished has nothing more to say: Node would keep
        // it half-open until the peer closes (an HTTP/2 client may never), so
        // it is cut below without waiting for the grace period.
        closeIdle();
        for (const s of unrouted) s.destroy();
        await Promise.all([...sockets].map(writingDone));
      })();
      await Promise.race([settled, deadline]);
      // The grace period is over (or everything has closed): cut what is left.
      h1?.closeAllConnections();
      h1?.close(); // stops its connection checker
      for (const s of sessions) s.destroy();
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}

/**
 * Answers an HTTP/1.1 request the parser refused (as Node does without a
 * listener: 431, 408 or 400) and closes the connection once the answer is
 * written. With TLS, the secure server also routes TLS errors here.
 */
function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  // Never write into a response that has already started (e.g. garbage
  // pipelined behind a request being answered): just close.
  // Only the HTTP/1.1 parser's errors get an answer; a TLS error (handshake
  // timeout, bad client hello) or a reset just closes.
  const fromParser = err.code !== undefined && (err.code.startsWith("HPE_") || err.code === "ERR_HTTP_REQUEST_TIMEOUT");
  const inProgress =
    (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
  if (!fromParser || !socket.writable || inProgress) {
    socket.destroy();
    return;
  }
  const status =
    err.code === "HPE_HEADER_OVERFLOW"
      ? "431 Request Header Fields Too Large"
      : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? "408 Request Timeout"
        : "400 Bad Request";
  socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`, () => socket.destroy());
  setTimeout(() => socket.destroy(), 1_000).unref(); // a client that does not read
}

/** Resolves once the socket has sent everything and its FIN (or is gone). */
function writingDone(socket: Duplex): Promise<void> {
  return new Promise((resolve) => {
    if (socket.destroyed || socket.writableFinished) return resolve();
    const done = () => {
      socket.off("finish", done);
      socket.off("close", done);
      resolve();
    };
    socket.on("finish", done);
    socket.on("close", done);
  });
}

function trackSocket(sockets: Set<Duplex>, socket: Duplex): void {
  sockets.add(socket);
  socket.once("close", () => sockets.delete(socket));
}

/**
 * Waits for enough bytes to tell the HTTP/2 preface from an HTTP/1.1 request
 * line, puts them back, and hands the socket on. A client that sends nothing
 * within the headers timeout is dropped.
 */
function sniff(socket: net.Socket, timeoutMs: number, route: (isH2: boolean) => void): void {
  let seen: Buffer = Buffer.alloc(0);
  const timer = setTimeout(() => socket.destroy(), timeoutMs);
  const onData = (chunk: Buffer) => {
    seen = seen.length === 0 ? chunk : Buffer.concat([seen, chunk]);
    const n = Math.min(seen.length, PREFACE.length);
    const isPrefacePrefix = seen.subarray(0, n).equals(PREFACE.subarray(0, n));
    if (isPrefacePrefix && n < PREFACE.length) return; // need more bytes
    done();
    // Put the bytes back for the server that takes the socket: the HTTP/2
    // session reads a paused socket's buffer on its next tick; the HTTP/1.1
    // parser needs the socket flowing again.
    socket.pause();
    socket.unshift(seen);
    route(isPrefacePrefix);
    if (!isPrefacePrefix) socket.resume();
  };
  const onGone = () => done();
  function done() {
    clearTimeout(timer);
    socket.off("data", onData);
    socket.off("close", onGone);
    socket.off("error", onGone);
  }
  socket.on("data", onData);
  socket.once("close", onGone);
  socket.once("error", onGone);
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
