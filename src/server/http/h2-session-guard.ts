/**
 * Deadlines and a reset limit for HTTP/2 clients — what Node gives HTTP/1.1
 * (headersTimeout, requestTimeout) and not HTTP/2, where a session lives as
 * long as its client keeps sending bytes:
 *
 * - a new session must complete its first request's headers within
 *   `headersMs` (a client trickling HEADERS never produces a stream);
 * - a stream's request (headers and body) must be complete within
 *   `requestMs` of its opening, else the stream is reset;
 * - once the answer is written, the client must take it within `responseMs`
 *   (one that advertises a zero window and never reads is reset);
 * - a session with no open stream for `idleMs` gets GOAWAY — bytes alone do
 *   not keep it alive, so headers trickled between requests are bounded too;
 * - a session one of whose streams was reset for a deadline gets GOAWAY as
 *   soon as nothing else is open, as HTTP/1.1's request time-out ends its
 *   connection: a client that sent headers and then went silent (reading
 *   nothing) is gone within `requestMs` + `goawayMs`, not after another
 *   `idleMs` of holding the session;
 * - a session told to go away (idle here, or at shutdown) with nothing left
 *   open is destroyed `goawayMs` later if its client keeps the socket open;
 * - a client may reset `resetBurst` streams at once and `resetsPerSecond`
 *   after that; past it (rapid reset) the session ends with GOAWAY
 *   ENHANCE_YOUR_CALM.
 *
 * One sweep per session (an unref'd interval) checks its streams, so a
 * request pays for two Map operations, not for timers.
 */
import http2 from "node:http2";

export interface H2Deadlines {
  readonly headersMs: number;
  readonly requestMs: number;
  readonly responseMs: number;
  readonly idleMs: number;
  readonly goawayMs: number;
  readonly resetBurst: number;
  readonly resetsPerSecond: number;
}

/** Streams this server reset itself (a deadline), which do not count as the client's resets. */
const ourResets = new WeakSet<http2.ServerHttp2Stream>();

interface StreamTimes {
  readonly openedAt: number;
  answeredAt: number | undefined;
}

export function guardSession(session: http2.ServerHttp2Session, d: H2Deadlines): void {
  const startedAt = performance.now();
  const streams = new Map<http2.ServerHttp2Stream, StreamTimes>();
  let everHadStream = false;
  let idleSince = startedAt;
  let goawaySince: number | undefined;
  let cutByDeadline = false;
  const tickMs = Math.max(20, Math.min(1_000, Math.floor(Math.min(d.headersMs, d.requestMs, d.responseMs) / 4)));

  const sweep = () => {
    const now = performance.now();
    if (session.closed && goawaySince === undefined) goawaySince = now; // GOAWAY from elsewhere (shutdown)
    for (const [stream, t] of streams) if (expireStream(stream, t, now, d)) cutByDeadline = true;
    if (streams.size > 0) return;
    if (goawaySince !== undefined) {
      if (now - goawaySince >= d.goawayMs) session.destroy();
    } else if (!everHadStream && now - startedAt >= d.headersMs) {
      session.destroy(); // the first request's headers never completed
    } else if (cutByDeadline || now - idleSince >= d.idleMs) {
      goawaySince = now;
      session.close();
    }
  };
  const timer = setInterval(sweep, tickMs);
  timer.unref();
  session.once("close", () => clearInterval(timer));
  const resets = resetBucket(session, d);
  // One function each for all the session's streams (`this`: the stream), not closures per stream: a
  // long-lived stream (a watch) keeps its listeners for hours.
  const streamAborted = function (this: http2.ServerHttp2Stream) {
    if (!ourResets.has(this)) resets();
  };
  const streamClosed = function (this: http2.ServerHttp2Stream) {
    streams.delete(this);
    if (streams.size === 0) idleSince = performance.now();
  };
  session.on("stream", (stream: http2.ServerHttp2Stream) => {
    everHadStream = true;
    // `on`, not `once`: each fires at most once, and a long-lived stream would keep once's wrapper.
    stream.on("aborted", streamAborted);
    streams.set(stream, { openedAt: performance.now(), answeredAt: undefined });
    stream.on("close", streamClosed);
  });
}

/** Resets a stream past its request or response deadline; true when it did. */
function expireStream(stream: http2.ServerHttp2Stream, t: StreamTimes, now: number, d: H2Deadlines): boolean {
  if (stream.destroyed) return false;
  const requestDone = stream.state.remoteClose === 1;
  if (!requestDone && now - t.openedAt >= d.requestMs) {
    reset(stream);
    return true;
  }
  if (!stream.writableEnded) return false;
  t.answeredAt ??= now;
  if (now - t.answeredAt < d.responseMs) return false;
  reset(stream);
  return true;
}

function reset(stream: http2.ServerHttp2Stream): void {
  ourResets.add(stream);
  stream.close(http2.constants.NGHTTP2_CANCEL);
}

/** Counts one client reset; ends the session once the client resets faster than allowed. */
function resetBucket(session: http2.ServerHttp2Session, d: H2Deadlines): () => void {
  let tokens = d.resetBurst;
  let at = performance.now();
  return () => {
    const now = performance.now();
    tokens = Math.min(d.resetBurst, tokens + ((now - at) * d.resetsPerSecond) / 1000) - 1;
    at = now;
    if (tokens >= 0 || session.destroyed || session.closed) return;
    session.goaway(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM);
    session.close(); // no new streams; the GOAWAY goes out first
    setTimeout(() => session.destroy(), 100).unref();
  };
}
