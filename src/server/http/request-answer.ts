/**
 * The plain-HTTP vocabulary every transport file shares: Node's request and
 * response types (HTTP/1.1 and the HTTP/2 compatibility layer alike), writing
 * a small complete answer, waiting for room in a streaming one, and reading a
 * header Node may give as a list.
 */
import { randomUUID } from "node:crypto";
import { IncomingMessage, type ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";

export type NodeRequest = IncomingMessage | Http2ServerRequest;
export type NodeResponse = ServerResponse | Http2ServerResponse;

export interface Answer {
  readonly status: number;
  readonly body: string;
  /** Default `application/json`. */
  readonly contentType?: string;
  /** Extra response headers (`Allow`, `Retry-After`, `WWW-Authenticate`…). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** Sends the whole answer (no body for HEAD); ends a response whose headers already went out. */
export function reply(res: NodeResponse, a: Answer, headOnly = false): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  res.statusCode = a.status;
  if (a.headers !== undefined) for (const [k, v] of Object.entries(a.headers)) res.setHeader(k, v);
  res.setHeader("content-type", a.contentType ?? "application/json");
  res.setHeader("content-length", Buffer.byteLength(a.body));
  if (headOnly) res.end();
  else res.end(a.body);
}

/**
 * Lets an HTTP/1.1 request that stays open for hours (an event stream) drop the headers it was read
 * from, once everything it needs of them is taken: Node keeps both their table and their raw list
 * (a JWT among them: hundreds of bytes) as long as the request. `Connection` stays, for the end of
 * the connection's turn (h1-pipelining.ts). HTTP/2's request has no place to drop them from.
 */
export function dropHeaders(req: NodeRequest): void {
  if (!(req instanceof IncomingMessage)) return;
  const { connection } = req.headers;
  req.headers = connection === undefined ? {} : { connection };
  req.rawHeaders = [];
}

/** The first value of a request header. */
export function firstHeader(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** The client's `X-Request-Id` when it is acceptable (1–128 of `[A-Za-z0-9._:-]`), else a new one. */
export function requestIdFrom(given: string | string[] | undefined): string {
  return typeof given === "string" && REQUEST_ID.test(given) ? given : randomUUID();
}

/**
 * Says the request id on an answer about to be written, unless it says it already. The dispatch
 * sets it on every answer but an event stream's (which names it in its own head, `writeHead`): set
 * ahead of the head, a header stays in the response's table of headers for the stream's life.
 */
export function sayingRequestId(res: NodeResponse, requestId: string): NodeResponse {
  if (!res.headersSent && !res.hasHeader("x-request-id")) res.setHeader("x-request-id", requestId);
  return res;
}

/**
 * Makes a request id compact, for a request that lives long (a watch). `randomUUID` builds its
 * text from many pieces, which V8 keeps as a tree of concatenations, several times the size of the
 * flat text, until something reads it by character; reading one flattens it in place, for every
 * holder of the string. A unary call's id dies young, so it is not worth doing there.
 */
export function compactRequestId(id: string): void {
  void id.charCodeAt(0);
}

/**
 * Resolves when an answer that was full can take more (`drain`) or is gone (`close`): a response of
 * either HTTP version, or a raw HTTP/2 stream. How a streaming answer waits for a slow client.
 */
export function writableAgain(answer: Pick<NodeJS.EventEmitter, "on" | "off">): Promise<void> {
  return eitherEvent(answer, "drain", "close");
}

/** Resolves at the first of two events of `emitter`, and leaves no listener behind. */
export function eitherEvent(emitter: Pick<NodeJS.EventEmitter, "on" | "off">, a: string, b: string): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      emitter.off(a, done);
      emitter.off(b, done);
      resolve();
    };
    emitter.on(a, done);
    emitter.on(b, done);
  });
}

/** The path of a request target, without its query. */
export function pathOf(url: string): string {
  const q = url.indexOf("?");
  return q < 0 ? url : url.slice(0, q);
}
