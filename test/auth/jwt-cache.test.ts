/**
 * The verified-token cache, through the public API on a fake clock: a token
 * is served from it (no second verification) only until its `exp` and for at
 * most `cacheMaxMs`, a changed token is verified afresh, and the cache never
 * holds more than its bound, the least recently used token going first.
 * Verifications are counted at jose's `jwtVerify`, the crypto the cache saves.
 */
import { randomBytes } from "node:crypto";
import { jwtVerify } from "jose";
import { afterEach, beforeEach, expect, test, vi } from "vitest";
import {
  DEFAULT_JWT_CACHE_MAX_MS,
  JwtAuthenticator,
  type JwtOptions,
  mintToken,
  VERIFIED_CACHE_SIZE,
} from "../../src/auth/jwt.js";
import { Failure } from "../../src/services/failure.js";

vi.mock("jose", async (importOriginal) => {
  const jose = await importOriginal<typeof import("jose")>();
  return { ...jose, jwtVerify: vi.fn(jose.jwtVerify) };
});

/** A whole second, so `exp` (in seconds) falls exactly on a millisecond we can step to. */
const START_MS = 1_800_000_000_000;
const secret = new Uint8Array(randomBytes(32));
const options: JwtOptions = {
  key: { kind: "secret", secret },
  algorithms: ["HS256"],
  projectClaim: "project_id",
  clockToleranceSeconds: 0,
};
const auth = () => new JwtAuthenticator(options);
const verifications = () => vi.mocked(jwtVerify).mock.calls.length;
const unauthenticated = (e: unknown) => e instanceof Failure && e.kind === "unauthenticated";

// Only Date is faked: jose and the cache read the time from it, and nothing here waits on timers.
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(START_MS);
  vi.mocked(jwtVerify).mockClear();
});
afterEach(() => {
  vi.useRealTimers();
});

test("a verified token is served from the cache until its exp, and refused from then on", async () => {
  const a = auth();
  const token = await mintToken({ secret, project: "p", subject: "s", ttlSeconds: 60 });
  expect(await a.authenticate(`Bearer ${token}`)).toMatchObject({ project: "p", subject: "s" });
  expect(verifications()).toBe(1);
  vi.setSystemTime(START_MS + 60_000 - 1);
  expect(await a.authenticate(`Bearer ${token}`)).toMatchObject({ project: "p", subject: "s" });
  expect(verifications()).toBe(1);
  vi.setSystemTime(START_MS + 60_000);
  await expect(a.authenticate(`Bearer ${token}`)).rejects.toSatisfy(unauthenticated);
  expect(verifications()).toBe(2);
  // Refused tokens are not remembered: each attempt is verified (and refused) again.
  await expect(a.authenticate(`Bearer ${token}`)).rejects.toSatisfy(unauthenticated);
  expect(verifications()).toBe(3);
});

test("a token with a changed payload is verified afresh, though the original is cached", async () => {
  const a = auth();
  const token = await mintToken({ secret, project: "p", subject: "s", ttlSeconds: 60 });
  await a.authenticate(`Bearer ${token}`);
  const [h, p, s] = token.split(".");
  const forged = Buffer.from(JSON.stringify({ project_id: "other", sub: "s", exp: 9_999_999_999 }));
  const tampered = `${h}.${forged.toString("base64url")}.${s}`;
  expect(tampered.split(".")[1]).not.toBe(p);
  await expect(a.authenticate(`Bearer ${tampered}`)).rejects.toSatisfy(unauthenticated);
  expect(verifications()).toBe(2);
});

test("the cache holds at most VERIFIED_CACHE_SIZE tokens, the least recently used going first", async () => {
  const a = auth();
  const tokens: string[] = [];
  for (let i = 0; i <= VERIFIED_CACHE_SIZE; i++) {
    tokens.push(await mintToken({ secret, project: "p", subject: `s${i}`, ttlSeconds: 60 }));
  }
  const [first, second, ...rest] = tokens;
  const newest = rest.pop();
  for (const t of [first, second, ...rest]) await a.authenticate(`Bearer ${t}`);
  // The first token is used again: the least recently used is now the second, and the newest pushes it out.
  await a.authenticate(`Bearer ${first}`);
  await a.authenticate(`Bearer ${newest}`);
  expect(verifications()).toBe(VERIFIED_CACHE_SIZE + 1);
  for (const t of [first, ...rest, newest]) await a.authenticate(`Bearer ${t}`);
  expect(verifications()).toBe(VERIFIED_CACHE_SIZE + 1);
  expect(await a.authenticate(`Bearer ${second}`)).toMatchObject({ subject: "s1" });
  expect(verifications()).toBe(VERIFIED_CACHE_SIZE + 2);
}, 60_000);

test("a verification is remembered for at most cacheMaxMs, however far ahead the token's exp", async () => {
  const a = new JwtAuthenticator({ ...options, cacheMaxMs: 30_000 });
  const token = await mintToken({ secret, project: "p", subject: "s", ttlSeconds: 365 * 86_400 });
  await a.authenticate(`Bearer ${token}`);
  vi.setSystemTime(START_MS + 30_000 - 1);
  await a.authenticate(`Bearer ${token}`);
  expect(verifications()).toBe(1);
  vi.setSystemTime(START_MS + 30_000);
  expect(await a.authenticate(`Bearer ${token}`)).toMatchObject({ project: "p", subject: "s" });
  expect(verifications()).toBe(2);
});

test("the default cap is DEFAULT_JWT_CACHE_MAX_MS, and 0 verifies every call", async () => {
  const token = await mintToken({ secret, project: "p", subject: "s", ttlSeconds: 365 * 86_400 });
  const byDefault = auth();
  await byDefault.authenticate(`Bearer ${token}`);
  vi.setSystemTime(START_MS + DEFAULT_JWT_CACHE_MAX_MS - 1);
  await byDefault.authenticate(`Bearer ${token}`);
  expect(verifications()).toBe(1);
  vi.setSystemTime(START_MS + DEFAULT_JWT_CACHE_MAX_MS);
  await byDefault.authenticate(`Bearer ${token}`);
  expect(verifications()).toBe(2);
  const never = new JwtAuthenticator({ ...options, cacheMaxMs: 0 });
  await never.authenticate(`Bearer ${token}`);
  await never.authenticate(`Bearer ${token}`);
  expect(verifications()).toBe(4);
});
