/**
 * Shared helpers of the contract suites (docs/architecture.md, "Error table"):
 * exact error-body assertions, tokens the harness does not mint (expired,
 * wrong key, no project claim), and bodies with a field left out. The routes,
 * the JSON-posting client, the request bodies and the Redis snapshots are in
 * test/harness.
 */
import { randomBytes } from "node:crypto";
import { SignJWT } from "jose";
import { expect } from "vitest";
import type { Boardline } from "../../harness/boardline.js";
import type { HttpAnswer } from "../../harness/http.js";

/** The exact 611 message of the error table. */
export const INVALID_PREFIX = "the API request is invalid, improperly formed, or missing a required field";

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

/** A copy of `body` without `keys` (a "missing field" body). */
export function without(body: Record<string, unknown>, ...keys: string[]): Record<string, unknown> {
  const copy = { ...body };
  for (const k of keys) delete copy[k];
  return copy;
}
