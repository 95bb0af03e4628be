/**
 * One port for everything. Cleartext: each new connection is sniffed
 * (connection-sniffer.ts) — the HTTP/2 preface goes to an HTTP/2 server,
 * anything else to an HTTP/1.1 server. TLS: ALPN picks h2 or http/1.1. Every
 * HTTP/2 stream goes to `dispatch.stream` first, every request to
 * `dispatch.request` (dispatch.ts).
 *
 * The boring production details are on by default: deadlines for the first
 * bytes, the request headers, the whole request and (HTTP/2, h2-session-guard.ts)
 * a client that will not take its answer or keeps an idle session; a header
 * size limit; and a graceful shutdown (drain.ts).
 */
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import type { Duplex } from "node:stream";
import { answerClientError } from "./client-error.js";
import { sniff } from "./connection-sniffer.js";
import type { Dispatch } from "../dispatch.js";
import { Drain } from "./drain.js";
import { inTurn, turnEnded } from "./h1-pipelining.js";
import { guardSession, type H2Deadlines } from "./h2-session-guard.js";
import type { NodeRequest, NodeResponse } from "./request-answer.js";

export interface ListenOptions {
  readonly host: string;
  readonly port: number;
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer };
  /** Time for a client to send its first bytes and its request headers. */
  readonly headersTimeoutMs?: number;
  /** Largest header block accepted, in bytes. */
  readonly maxHeaderBytes?: number;
  /** Time for a client to send a whole request (headers and body). */
  readonly requestTimeoutMs?: number;
  /** HTTP/2: time for a client to take an answer once it is written. */
  readonly responseTimeoutMs?: number;
  /** Connections with no request in flight for this long are closed. */
  readonly idleTimeoutMs?: number;
  /**
   * An error of the listening socket after start (e.g. EMFILE when an accept
   * finds no file descriptor left): reported here, and the server serves on.
   */
  readonly onListenerError?: (error: NodeJS.ErrnoException) => void;
}

export interface RunningServer {
  readonly port: number;
  readonly url: string;
  /** Stops accepting, waits for in-flight requests up to `graceMs`, then closes every connection. */
  shutdown(graceMs: number): Promise<void>;
}

interface Limits {
  readonly headersTimeout: number;
  readonly requestTimeout: number;
  readonly maxHeaderSize: number;
  readonly h2: H2Deadlines;
}

export async function listen(options: ListenOptions, dispatch: Dispatch): Promise<RunningServer> {
  const headersTimeout = options.headersTimeoutMs ?? 10_000;
  const requestTimeout = options.requestTimeoutMs ?? 30_000;
  const limits: Limits = {
    headersTimeout,
    requestTimeout,
    maxHeaderSize: options.maxHeaderBytes ?? 16 * 1024,
    h2: {
      headersMs: headersTimeout,
      requestMs: requestTimeout,
      responseMs: options.responseTimeoutMs ?? 10_000,
      idleMs: options.idleTimeoutMs ?? 60_000,
      goawayMs: 1_000,
      resetBurst: 100,
      resetsPerSecond: 20,
    },
  };
  const drain = new Drain();
  // Everything an answer's close means, in one listener for every answer (`this`: the answer): an
  // open watch keeps its listeners for hours, and a third one would grow the answer's list of them.
  const answerClosed = function (this: NodeResponse) {
    drain.answered(this);
    turnEnded(this);
  };
  const onRequest = (req: NodeRequest, res: NodeResponse) => {
    res.on("close", answerClosed); // fires once (`on`: no wrapper kept for a long answer, a watch)
    drain.request(req, res);
    if (req.httpVersionMajor === 1) inTurn(req, res, () => dispatch.request(req, res));
    else afterPendingResets(req as http2.Http2ServerRequest, () => dispatch.request(req, res));
  };
  const servers =
    options.tls === undefined
      ? cleartextServers(limits, drain, dispatch, onRequest)
      : secureServer(limits, options.tls, drain, dispatch, onRequest);
  const outer = servers.outer;
  // After start, an error of the listening socket (an accept that failed) ends no connection and
  // stops nothing: Node keeps accepting. It is reported, never thrown.
  outer.on("error", (e: NodeJS.ErrnoException) => options.onListenerError?.(e));
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
    shutdown: (graceMs) =>
      drain.shutdown(graceMs, {
        closeListener: () => new Promise<void>((resolve) => outer.close(() => resolve())),
        closeIdle: servers.closeIdle,
        closeAll: servers.closeAll,
      }),
  };
}

interface Servers {
  readonly outer: net.Server;
  closeIdle(): void;
  closeAll(): void;
}

function h1Limits(l: Limits) {
  return {
    maxHeaderSize: l.maxHeaderSize,
    headersTimeout: l.headersTimeout,
    requestTimeout: l.requestTimeout,
    keepAliveTimeout: 5_000,
    // The timeouts are only as precise as this check.
    connectionsCheckingInterval: Math.max(50, Math.min(1_000, Math.floor(l.headersTimeout / 4))),
  };
}

function h2Options(l: Limits): http2.ServerOptions {
  return {
    maxHeaderListPairs: 128,
    maxSessionMemory: 16,
    settings: { maxHeaderListSize: l.maxHeaderSize, maxConcurrentStreams: 256 },
  };
}

/** Cleartext: a sniffing TCP server that hands each connection to an HTTP/1.1 or an HTTP/2 server. */
function cleartextServers(
  l: Limits,
  drain: Drain,
  dispatch: Dispatch,
  onRequest: (req: NodeRequest, res: NodeResponse) => void,
): Servers {
  const h1 = http.createServer(h1Limits(l), onRequest);
  h1.on("clientError", answerClientError);
  // This server never listens itself (the sniffer hands it connections), but
  // Node only starts its connection tracking — which enforces the headers
  // and request timeouts and which closeIdleConnections() and
  // closeAllConnections() rely on — on "listening".
  h1.emit("listening");
  const h2 = http2.createServer(h2Options(l), onRequest as never);
  h2.on("session", (s: http2.ServerHttp2Session) => onSession(s, l, drain));
  streamsToDispatch(h2, drain, dispatch);
  const outer = net.createServer({ noDelay: true }, (socket) => {
    drain.socket(socket, true);
    sniff(socket, l.headersTimeout, (isH2) => {
      drain.routed(socket);
      (isH2 ? h2 : h1).emit("connection", socket);
    });
  });
  return {
    outer,
    closeIdle: () => h1.closeIdleConnections(),
    closeAll: () => {
      h1.closeAllConnections();
      h1.close(); // stops its connection checker
    },
  };
}

/** TLS: one secure HTTP/2 server with the HTTP/1.1 fallback, ALPN choosing. */
function secureServer(
  l: Limits,
  tls: NonNullable<ListenOptions["tls"]>,
  drain: Drain,
  dispatch: Dispatch,
  onRequest: (req: NodeRequest, res: NodeResponse) => void,
): Servers {
  const secure = http2.createSecureServer(
    { ...h2Options(l), cert: tls.cert, key: tls.key, allowHTTP1: true, handshakeTimeout: l.headersTimeout },
    onRequest as never,
  );
  // The HTTP/1.1 fallback of a secure HTTP/2 server reads its limits off the
  // server object (Node's defaults: 60 s headers timeout, checked every 30 s,
  // no keep-alive timeout), not off the options: set them here.
  Object.assign(secure, h1Limits(l));
  secure.on("clientError", answerClientError);
  secure.on("session", (s: http2.ServerHttp2Session) => onSession(s, l, drain));
  streamsToDispatch(secure, drain, dispatch);
  secure.on("secureConnection", (s: Duplex) => drain.socket(s));
  // Node's secure HTTP/2 server has it (for its HTTP/1.1 fallback); @types/node does not declare it.
  const closeIdle = () => (secure as unknown as { closeIdleConnections(): void }).closeIdleConnections();
  return { outer: secure, closeIdle, closeAll: () => {} };
}

/**
 * Runs an HTTP/2 request one turn later, and not at all when its stream is
 * already gone: a client resetting streams as fast as it opens them (rapid
 * reset) usually sends the RST_STREAM in the same packet as the HEADERS, so
 * the reset stream costs the compatibility layer's objects, never a route.
 */
function afterPendingResets(req: http2.Http2ServerRequest, run: () => void): void {
  setImmediate(() => {
    if (!req.stream.closed && !req.stream.destroyed) run();
  });
}

function onSession(session: http2.ServerHttp2Session, l: Limits, drain: Drain): void {
  drain.session(session);
  guardSession(session, l.h2);
}

/**
 * Puts `dispatch.stream` in front of Node's HTTP/2 compatibility layer (the
 * "stream" listener that creating the server with a request listener
 * installed), so a stream the fast path takes never pays for the
 * compatibility request/response objects.
 */
function streamsToDispatch(server: http2.Http2Server | http2.Http2SecureServer, drain: Drain, dispatch: Dispatch) {
  const compat = server.listeners("stream") as Array<(...args: unknown[]) => void>;
  server.removeAllListeners("stream");
  server.on("stream", (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, ...rest: unknown[]) => {
    if (dispatch.stream(stream, headers)) {
      drain.stream(stream);
      return;
    }
    for (const listener of compat) listener.call(server, stream, headers, ...rest);
  });
}
