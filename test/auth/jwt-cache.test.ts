/**
 * The verified-token cache, through the public API on a fake clock: a token
 * is served from it (no second verification) only until its `exp`, a changed
 * token is verified afresh, and the cache never holds more than its bound.
 * Verifications are counted at jose's `jwtVerify`, the crypto the cache saves.
 */
import { randomBytes } from "node:crypto";
import { jwtVerify } from "jose";
import { afterEach, beforeEach, expect, test, vi } from "vitest";
import { JwtAuthenticator, mintToken, VERIFIED_CACHE_SIZE } from "../../src/auth/jwt.js";
import { Failure } from "../../src/services/failure.js";

vi.mock("jose", async (importOriginal) => {
  const jose = await importOriginal<typeof import("jose")>();
  return { ...jose, jwtVerify: vi.fn(jose.jwtVerify) };
});

/** A whole second, so `exp` (in seconds) falls exactly on a millisecond we can step to. */
const START_MS = 1_800_000_000_000;
const secret = new Uint8Array(randomBytes(32));
const auth = () =>
  new JwtAuthenticator({
    key: { kind: "secret", secret },
    algorithms: ["HS256"],
    projectClaim: "project_id",
    clockToleranceSeconds: 0,
  });
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

test("the cache holds at most VERIFIED_CACHE_SIZE tokens, the oldest going first", async () => {
  const a = auth();
  const tokens: string[] = [];
  for (let i = 0; i <= VERIFIED_CACHE_SIZE; i++) {
    tokens.push(await mintToken({ secret, project: "p", subject: `s${i}`, ttlSeconds: 60 }));
  }
  for (const t of tokens) await a.authenticate(`Bearer ${t}`);
  expect(verifications()).toBe(VERIFIED_CACHE_SIZE + 1);
  // The newest VERIFIED_CACHE_SIZE are all still cached...
  for (const t of tokens.slice(1)) await a.authenticate(`Bearer ${t}`);
  expect(verifications()).toBe(VERIFIED_CACHE_SIZE + 1);
  // ...and the first one made room for them.
  const [first] = tokens;
  expect(await a.authenticate(`Bearer ${first}`)).toMatchObject({ subject: "s0" });
  expect(verifications()).toBe(VERIFIED_CACHE_SIZE + 2);
}, 60_000);
