/**
 * The simulator's plain HTTP plumbing: reading a request's body and headers,
 * recording what was sent, and writing JSON answers the way the real API does
 * (errors are `{"message": …}`).
 */
import type http from "node:http";

const MAX_BODY_BYTES = 64 * 1024;

/** A status and a JSON body, before it is written. */
export interface Answer {
  readonly status: number;
  readonly body: unknown;
}

export interface RecordedRequest {
  readonly method: string;
  /** Path and query, as sent. */
  readonly path: string;
  /** Lower-case names; includes `token` and `region`. */
  readonly headers: Readonly<Record<string, string>>;
  /** Parsed JSON, the raw text when it is not JSON, or undefined when empty. */
  readonly body: unknown;
  readonly at: number;
}

export function errorAnswer(status: number, message: string): Answer {
  return { status, body: { message } };
}

export function send(res: http.ServerResponse, answer: Answer, headers: Record<string, string> = {}): void {
  if (res.destroyed || res.headersSent) return;
  const text = JSON.stringify(answer.body);
  res.writeHead(answer.status, {
    ...headers,
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}

/**
 * The body as text, or undefined when it is over the limit. An oversized body
 * is still drained (not kept) so the 413 can be answered on a healthy socket.
 */
export function readBody(req: http.IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on("end", () => resolve(size > MAX_BODY_BYTES ? undefined : Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

export function parseBody(text: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export function recordRequest(req: http.IncomingMessage, body: unknown, at: number): RecordedRequest {
  return { method: req.method ?? "", path: req.url ?? "", headers: flattenHeaders(req.headers), body, at };
}

export function header(req: http.IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(", ") : value;
}

function flattenHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name] = Array.isArray(value) ? value.join(", ") : value;
  }
  return flat;
}
