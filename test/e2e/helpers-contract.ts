/**
 * Shared helpers of the contract suites (docs/architecture.md, "Error table"): the two JSON routes,
 * a fetch wrapper, exact error-body assertions, tokens the harness does not
 * mint (expired, wrong key, no project claim), raw Redis snapshots of
 * everything a request could write, and the catalogue of error cases that the
 * RPC suites replay over gRPC and Connect.
 */
import { randomBytes } from "node:crypto";
import http2 from "node:http2";
import { Redis } from "ioredis";
import { SignJWT } from "jose";
import { expect } from "vitest";
import type { Boardline } from "../harness/boardline.js";
import { redisUrl } from "../harness/redis-url.js";

export const MUTE_PATH = "/v1/channel/pstn/mute";
export const CONVERT_PATH = "/v1/whiteboard/fileconvert";

/** The exact 611 message (docs/architecture.md, "Error table"). */
export const INVALID_PREFIX = "the API request is invalid, improperly formed, or missing a required field";

export type Op = "mute" | "convert";
export const PATHS: Record<Op, string> = { mute: MUTE_PATH, convert: CONVERT_PATH };

export interface HttpAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
}

export interface PostOptions {
  /** A bearer token; null sends no Authorization header. Default: a valid token of world.project. */
  readonly token?: string | null;
  /** A full Authorization header value (wins over `token`). */
  readonly authorization?: string;
  /** null sends no Content-Type. Default application/json. */
  readonly contentType?: string | null;
  readonly method?: string;
}

/** POSTs `body` (a string is sent verbatim, anything else as JSON). */
export async function post(bl: Boardline, path: string, body: unknown, o: PostOptions = {}): Promise<HttpAnswer> {
  const headers: Record<string, string> = {};
  if (o.authorization !== undefined) headers["authorization"] = o.authorization;
  else {
    const token = o.token === undefined ? await bl.token() : o.token;
    if (token !== null) headers["authorization"] = `Bearer ${token}`;
  }
  const contentType = o.contentType === undefined ? "application/json" : o.contentType;
  const payload = typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body);
  const init: RequestInit = { method: o.method ?? "POST", headers };
  if (init.method !== "GET" && init.method !== "HEAD") {
    // fetch adds text/plain for a string body unless told otherwise: send bytes then.
    init.body = contentType === null ? new TextEncoder().encode(String(payload)) : payload;
    if (contentType !== null) headers["content-type"] = contentType;
  }
  const res = await fetch(`${bl.url}${path}`, init);
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/**
 * Asserts the exact error shape `{"error":{"code":N,"message":S}}` (no other
 * keys anywhere) and returns the message. `message` may be a string (exact),
 * or "611" for the invalid-request message with an optional clause.
 */
export function expectError(res: HttpAnswer, http: number, code: number, message?: string | RegExp): string {
  expect({ status: res.status, body: res.text }).toMatchObject({ status: http });
  expect(res.headers.get("content-type") ?? "").toMatch(/^application\/json/);
  const body = JSON.parse(res.text) as unknown;
  expect(body).toBeTypeOf("object");
  expect(Object.keys(body as object)).toEqual(["error"]);
  const error = (body as { error: unknown }).error as Record<string, unknown>;
  expect(Object.keys(error).sort()).toEqual(["code", "message"]);
  expect(error["code"]).toBe(code);
  expect(error["message"]).toBeTypeOf("string");
  const text = error["message"] as string;
  if (code === 611) expectInvalidMessage(text);
  if (typeof message === "string") expect(text).toBe(message);
  else if (message !== undefined) expect(text).toMatch(message);
  expectNoLeak(text);
  return text;
}

/** The 611 message: exactly the prefix, or the prefix, `: ` and a non-empty clause. */
export function expectInvalidMessage(text: string): void {
  expect(text.startsWith(INVALID_PREFIX), text).toBe(true);
  const rest = text.slice(INVALID_PREFIX.length);
  if (rest !== "") {
    expect(rest.startsWith(": "), text).toBe(true);
    expect(rest.length, text).toBeGreaterThan(2);
  }
}

/** Nothing from Redis, the backend's bodies, stack traces or our tokens reaches a caller. */
export function expectNoLeak(text: string): void {
  for (const forbidden of [
    /simulated fault/i,
    /this is not JSON/i,
    /<html>/i,
    /ECONNRESET|ECONNREFUSED|socket hang up/i,
    /\bat .+\.(ts|js):\d+/,
    /ReplyError|WRONGTYPE|NOSCRIPT|ioredis|redis/i,
    /NETLESSSDK_/,
    /127\.0\.0\.1|localhost/,
    /HTTP (4|5)\d\d/,
  ]) {
    expect(text).not.toMatch(forbidden);
  }
}

// ---------------------------------------------------------------- tokens

/** Signs a token with the server's secret (or another key) and any claims. */
export async function signToken(
  bl: Boardline,
  o: {
    claims?: Record<string, unknown>;
    subject?: string;
    expSeconds?: number;
    secret?: Uint8Array;
    alg?: string;
  } = {},
): Promise<string> {
  let jwt = new SignJWT(o.claims ?? { project_id: bl.world.project })
    .setProtectedHeader({ alg: o.alg ?? "HS256", typ: "JWT" })
    .setIssuedAt();
  if (o.subject !== "") jwt = jwt.setSubject(o.subject ?? "tester");
  jwt = jwt.setExpirationTime(Math.floor(Date.now() / 1000) + (o.expSeconds ?? 600));
  return jwt.sign(o.secret ?? bl.secret);
}

/** The 401 cases: a name and the Authorization header to send (undefined: none). */
export async function unauthenticatedCases(
  bl: Boardline,
): Promise<{ name: string; authorization: string | undefined }[]> {
  const good = await bl.token();
  return [
    { name: "no Authorization header", authorization: undefined },
    { name: "not Bearer (Basic)", authorization: `Basic ${Buffer.from("a:b").toString("base64")}` },
    { name: "Bearer without a token", authorization: "Bearer " },
    { name: "malformed token", authorization: "Bearer not-a-jwt" },
    {
      name: "token with a bad signature",
      authorization: `Bearer ${await signToken(bl, { secret: new Uint8Array(randomBytes(32)) })}`,
    },
    { name: "tampered token", authorization: `Bearer ${good.slice(0, -3)}${good.endsWith("AAA") ? "BBB" : "AAA"}` },
    { name: "expired token", authorization: `Bearer ${await signToken(bl, { expSeconds: -3600 })}` },
    {
      name: "token without the project claim",
      authorization: `Bearer ${await signToken(bl, { claims: { other: "x" } })}`,
    },
  ];
}

// ---------------------------------------------------------------- bodies

export function muteBody(bl: Boardline, over: Record<string, unknown> = {}): Record<string, unknown> {
  return { uid: "u-1", passphrase: bl.world.hostPassphrase, mute: true, ...over };
}

export function convertBody(bl: Boardline, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    resource_url: "https://docs.example.com/deck.pptx",
    passphrase: bl.world.hostPassphrase,
    conversion_type: "static",
    ...over,
  };
}

/** Drops the keys whose value is undefined (a "missing field" body). */
export function without(body: Record<string, unknown>, ...keys: string[]): Record<string, unknown> {
  const copy = { ...body };
  for (const k of keys) delete copy[k];
  return copy;
}

// ---------------------------------------------------------------- Redis state

export interface Snapshot {
  /** Every key under the prefix with its type and contents (passphrase and project records included). */
  readonly keys: Record<string, unknown>;
}

/** Opens a raw ioredis connection to the test Redis (close it with `disconnect()`). */
export function rawRedis(): Redis {
  return new Redis(redisUrl(), { maxRetriesPerRequest: 1 });
}

/** Reads everything under `bl.prefix`: a failed call must leave this exactly as it was. */
export async function snapshot(redis: Redis, bl: Boardline): Promise<Snapshot> {
  const keys: Record<string, unknown> = {};
  let cursor = "0";
  const names: string[] = [];
  do {
    const [next, found] = await redis.scan(cursor, "MATCH", `${bl.prefix}*`, "COUNT", 1000);
    cursor = next;
    names.push(...found);
  } while (cursor !== "0");
  for (const key of names.sort()) {
    const type = await redis.type(key);
    if (type === "hash") keys[key] = await redis.hgetall(key);
    else if (type === "stream") keys[key] = await redis.xrange(key, "-", "+");
    else keys[key] = type;
  }
  return { keys };
}

export function muteKey(bl: Boardline, project = bl.world.project, channel = bl.world.channel): string {
  return `${bl.prefix}chan:{${project}/${channel}}:pstn-mute`;
}

export function eventsKey(bl: Boardline, project = bl.world.project, channel = bl.world.channel): string {
  return `${bl.prefix}chan:{${project}/${channel}}:pstn-events`;
}

export function conversionKey(bl: Boardline, uuid: string): string {
  return `${bl.prefix}conv:{${uuid}}`;
}

/** Conversion records under the prefix. */
export function conversionKeys(s: Snapshot, bl: Boardline): string[] {
  return Object.keys(s.keys).filter((k) => k.startsWith(`${bl.prefix}conv:`));
}

// ---------------------------------------------------------------- HTTP/2

/**
 * One request over HTTP/2 cleartext with prior knowledge (as an h2c client or
 * a proxy speaks to the port), on a session of its own.
 */
export async function requestH2(
  bl: Boardline,
  path: string,
  o: { method?: string; headers?: Record<string, string>; body?: string | Uint8Array } = {},
): Promise<HttpAnswer> {
  const session = http2.connect(bl.url);
  try {
    return await new Promise<HttpAnswer>((resolve, reject) => {
      session.once("error", reject);
      const req = session.request({ ":method": o.method ?? "POST", ":path": path, ...o.headers });
      const chunks: Buffer[] = [];
      let status = 0;
      const headers = new Headers();
      req.once("response", (h) => {
        status = Number(h[":status"]);
        for (const [k, v] of Object.entries(h)) {
          if (!k.startsWith(":") && v !== undefined) headers.set(k, Array.isArray(v) ? v.join(", ") : String(v));
        }
      });
      req.on("data", (c: Buffer) => chunks.push(c));
      req.once("end", () => resolve({ status, headers, text: Buffer.concat(chunks).toString("utf8") }));
      req.once("error", reject);
      req.end(o.body);
    });
  } finally {
    session.close();
  }
}

/** `post` over HTTP/2: the same options. */
export async function postH2(bl: Boardline, path: string, body: unknown, o: PostOptions = {}): Promise<HttpAnswer> {
  const headers: Record<string, string> = {};
  if (o.authorization !== undefined) headers["authorization"] = o.authorization;
  else {
    const token = o.token === undefined ? await bl.token() : o.token;
    if (token !== null) headers["authorization"] = `Bearer ${token}`;
  }
  const contentType = o.contentType === undefined ? "application/json" : o.contentType;
  if (contentType !== null) headers["content-type"] = contentType;
  const payload = typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body);
  return requestH2(bl, path, { method: o.method ?? "POST", headers, body: payload });
}
