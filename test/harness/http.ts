/**
 * The one way tests post JSON to a route and read the answer: `postJson`
 * (fetch, HTTP/1.1) and `postJsonH2` (HTTP/2 cleartext with prior knowledge,
 * as an h2c client or a proxy speaks to the port), both answering the status,
 * the headers and the body text.
 */
import { closeSession, h2, h2connect } from "./http-clients.js";

export const JSON_HEADERS = { "content-type": "application/json" } as const;

export interface HttpAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
}

/**
 * Where to post: a server's base URL, and for a started boardline its `token()`,
 * which mints the default bearer token (a boardline started by test/harness/boardline.ts
 * is one as it is).
 */
export interface PostTarget {
  readonly url: string;
  token?(): Promise<string>;
}

export interface PostOptions {
  /**
   * A bearer token; null sends no Authorization header. Default: `target.token()`
   * (a valid token of world.project), or none for a target without one.
   */
  readonly token?: string | null;
  /** A full Authorization header value (wins over `token`). */
  readonly authorization?: string;
  /** null sends no Content-Type. Default application/json. */
  readonly contentType?: string | null;
  readonly method?: string;
  /** More request headers. */
  readonly headers?: Record<string, string>;
  /** Aborts the request (fetch only). */
  readonly signal?: AbortSignal;
}

/** POSTs `body` (a string or bytes are sent verbatim, anything else as JSON). */
export async function postJson(to: PostTarget, path: string, body: unknown, o: PostOptions = {}): Promise<HttpAnswer> {
  const headers = await requestHeaders(to, o);
  const contentType = o.contentType === undefined ? "application/json" : o.contentType;
  const payload = encode(body);
  const init: RequestInit = { method: o.method ?? "POST", headers };
  if (o.signal !== undefined) init.signal = o.signal;
  if (init.method !== "GET" && init.method !== "HEAD") {
    // fetch adds text/plain for a string body unless told otherwise: send bytes then.
    init.body = contentType === null && typeof payload === "string" ? new TextEncoder().encode(payload) : payload;
    if (contentType !== null) headers["content-type"] = contentType;
  }
  const res = await fetch(`${to.url}${path}`, init);
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** `postJson` over HTTP/2 on a session of its own: the same options (but `signal`). */
export async function postJsonH2(
  to: PostTarget,
  path: string,
  body: unknown,
  o: PostOptions = {},
): Promise<HttpAnswer> {
  const headers = await requestHeaders(to, o);
  const contentType = o.contentType === undefined ? "application/json" : o.contentType;
  if (contentType !== null) headers["content-type"] = contentType;
  return requestH2(to.url, path, { method: o.method ?? "POST", headers, body: encode(body) });
}

/** One request (POST unless told) over HTTP/2 cleartext with prior knowledge, on a session of its own. */
export async function requestH2(
  url: string,
  path: string,
  o: { method?: string; headers?: Record<string, string>; body?: string | Uint8Array } = {},
): Promise<HttpAnswer> {
  const session = await h2connect(url);
  try {
    const res = await h2(session, path, { ...o, method: o.method ?? "POST" });
    const headers = new Headers();
    for (const [k, v] of Object.entries(res.headers)) {
      if (!k.startsWith(":") && v !== undefined) headers.set(k, Array.isArray(v) ? v.join(", ") : String(v));
    }
    return { status: res.status, headers, text: res.body };
  } finally {
    await closeSession(session);
  }
}

/** The answer's body, parsed as JSON. */
export function parseBody<T = unknown>(res: HttpAnswer): T {
  return JSON.parse(res.text) as T;
}

async function requestHeaders(to: PostTarget, o: PostOptions): Promise<Record<string, string>> {
  const headers: Record<string, string> = { ...o.headers };
  if (o.authorization !== undefined) headers.authorization = o.authorization;
  else {
    const token = o.token === undefined ? await to.token?.() : o.token;
    if (token !== null && token !== undefined) headers.authorization = `Bearer ${token}`;
  }
  return headers;
}

function encode(body: unknown): string | Uint8Array {
  return typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body);
}
