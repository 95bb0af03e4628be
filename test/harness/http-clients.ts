/**
 * Small real clients, for tests that care how a request travels: node:http
 * (or node:https), node:http2 sessions, and raw TCP sockets. To post JSON to a
 * route and read the answer, use `postJson` (http.ts).
 */
import http from "node:http";
import http2 from "node:http2";
import https from "node:https";
import net from "node:net";

export interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

export interface H1Options {
  readonly method?: string;
  readonly headers?: Record<string, string>;
  readonly body?: string | Buffer;
  readonly agent?: http.Agent | false;
  /** Write the body in these pieces, without Content-Length (chunked). */
  readonly chunks?: readonly Buffer[];
  readonly ca?: string | Buffer;
}

/** One HTTP/1.1 request with node:http (or node:https for an https URL). */
export function h1(url: string, path: string, o: H1Options = {}): Promise<Answer & { socket: net.Socket }> {
  return new Promise((resolve, reject) => {
    const u = new URL(path, url);
    const headers: Record<string, string | number> = { ...o.headers };
    if (o.body !== undefined) headers["content-length"] = Buffer.byteLength(o.body);
    const options: https.RequestOptions = {
      method: o.method ?? "GET",
      headers,
      agent: o.agent ?? false,
      ...(o.ca === undefined ? {} : { ca: o.ca, servername: "localhost" }),
    };
    let socket: net.Socket | undefined;
    const req = (u.protocol === "https:" ? https : http).request(u, options, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks).toString("utf8"),
          socket: socket as net.Socket,
        }),
      );
      res.on("error", reject);
    });
    req.on("socket", (s) => {
      socket = s as net.Socket;
    });
    req.on("error", reject);
    if (o.chunks !== undefined) {
      for (const c of o.chunks) req.write(c);
      req.end();
    } else {
      req.end(o.body);
    }
  });
}

/** One request on an HTTP/2 session. */
export function h2(
  session: http2.ClientHttp2Session,
  path: string,
  o: { method?: string; headers?: Record<string, string>; body?: string | Uint8Array } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ":method": o.method ?? "GET", ":path": path, ...o.headers });
    let status = 0;
    let headers: Record<string, string | string[] | undefined> = {};
    const chunks: Buffer[] = [];
    stream.on("response", (h) => {
      status = Number(h[":status"]);
      headers = h as Record<string, string | string[] | undefined>;
    });
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("end", () => resolve({ status, headers, body: Buffer.concat(chunks).toString("utf8") }));
    stream.on("error", reject);
    stream.end(o.body);
  });
}

/** An h2 session (prior knowledge for http:, ALPN for https:), errors collected instead of thrown. */
export function h2connect(url: string, ca?: string | Buffer): Promise<http2.ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url, ca === undefined ? {} : { ca, servername: "localhost" });
    session.once("connect", () => resolve(session));
    session.once("error", reject);
  });
}

export function closeSession(session: http2.ClientHttp2Session): Promise<void> {
  return new Promise((resolve) => {
    if (session.closed || session.destroyed) return resolve();
    session.close(() => resolve());
  });
}

/** A raw TCP connection and everything it receives until the server closes it. */
export interface RawConnection {
  readonly socket: net.Socket;
  /** Everything received so far. */
  received(): string;
  /** Resolves when the server has closed (or reset) the connection, with the ms since connect. */
  readonly closed: Promise<number>;
}

export function raw(port: number): Promise<RawConnection> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: "127.0.0.1", port });
    const chunks: Buffer[] = [];
    const started = performance.now();
    socket.on("data", (c: Buffer) => chunks.push(c));
    const closed = new Promise<number>((res) => {
      socket.once("close", () => res(performance.now() - started));
    });
    socket.on("error", () => {});
    socket.once("connect", () => {
      socket.off("error", reject);
      resolve({ socket, received: () => Buffer.concat(chunks).toString("latin1"), closed });
    });
    socket.once("error", reject);
  });
}

/** Splits raw HTTP/1.1 responses (Content-Length framed) out of a byte string. */
export function parseResponses(text: string): { status: number; headers: Record<string, string>; body: string }[] {
  const out: { status: number; headers: Record<string, string>; body: string }[] = [];
  let rest = text;
  while (rest.length > 0) {
    const end = rest.indexOf("\r\n\r\n");
    if (end < 0) break;
    const [statusLine, ...lines] = rest.slice(0, end).split("\r\n");
    const headers: Record<string, string> = {};
    for (const l of lines) {
      const i = l.indexOf(":");
      headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
    }
    const length = Number(headers["content-length"] ?? 0);
    const body = rest.slice(end + 4, end + 4 + length);
    out.push({ status: Number(statusLine?.split(" ")[1]), headers, body });
    rest = rest.slice(end + 4 + length);
  }
  return out;
}

/** What became of a request whose head was answered before its body was sent. */
export interface HeadFirstOutcome {
  /** Everything the server sent, up to its FIN. */
  readonly received: string;
  /** How sending the body afterwards ended: a socket error code, or "accepted". */
  readonly bodyOutcome: string;
  /** From sending the body to the connection's close. */
  readonly closedAfterMs: number;
}

/**
 * Sends only the head (the caller declares the body's length in it), waits
 * until the server has answered and closed its side, then sends `body` anyway.
 * Unlike fetch, which may reject when the server cuts the upload short, this
 * always sees the answer: it is complete before any body byte is on the wire.
 * Fails after `timeoutMs` when the server waits for the body instead.
 */
export async function headFirst(
  port: number,
  head: string,
  body: Uint8Array,
  timeoutMs = 5_000,
): Promise<HeadFirstOutcome> {
  const socket = net.connect({ host: "127.0.0.1", port, allowHalfOpen: true });
  const chunks: Buffer[] = [];
  socket.on("data", (c: Buffer) => chunks.push(c));
  let failure: NodeJS.ErrnoException | undefined;
  socket.on("error", (e: NodeJS.ErrnoException) => {
    failure = e;
  });
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once("connect", resolve);
      socket.once("error", reject);
    });
    socket.write(head);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer and FIN within ${timeoutMs} ms of the head`)), timeoutMs);
    });
    await Promise.race([new Promise((resolve) => socket.once("end", resolve)), late]).finally(() =>
      clearTimeout(timer),
    );
    const received = Buffer.concat(chunks).toString("latin1");
    const sentAt = performance.now();
    socket.end(body);
    await closed;
    return { received, bodyOutcome: failure?.code ?? "accepted", closedAfterMs: performance.now() - sentAt };
  } finally {
    socket.destroy();
  }
}
