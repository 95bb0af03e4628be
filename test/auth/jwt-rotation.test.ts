/**
 * A key withdrawn from the JWKS stops a long-lived token within the documented
 * bound: JWT_CACHE_MAX_MS (our cache) on top of the 10 min jose reuses a
 * fetched key set. The JWKS is served by a local HTTP server and counts its
 * fetches; only Date is faked (jose and the cache read the time from it), so
 * the fetch itself runs on real timers.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, type JWK, SignJWT } from "jose";
import { afterAll, afterEach, beforeAll, beforeEach, expect, test, vi } from "vitest";
import { JwtAuthenticator } from "../../src/auth/jwt.js";
import { Failure } from "../../src/services/failure.js";

const START_MS = 1_800_000_000_000;
const CACHE_MAX_MS = 60_000;
/** jose's cacheMaxAge as src/auth/jwt.ts sets it: a fetched key set is used this long without a refetch. */
const JWKS_REUSE_MS = 600_000;

let served: { keys: JWK[] } = { keys: [] };
let fetches = 0;
const jwks = http.createServer((_req, res) => {
  fetches++;
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify(served));
});
let url: URL;

beforeAll(async () => {
  await new Promise<void>((r) => jwks.listen(0, "127.0.0.1", r));
  url = new URL(`http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks.json`);
});
afterAll(async () => {
  await new Promise((r) => jwks.close(r));
});
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(START_MS);
});
afterEach(() => {
  vi.useRealTimers();
});

const at = (ms: number) => vi.setSystemTime(START_MS + ms);
const unauthenticated = (e: unknown) => e instanceof Failure && e.kind === "unauthenticated";

test("a token whose key is withdrawn is refused within JWT_CACHE_MAX_MS after jose's key set goes stale", async () => {
  const old = await generateKeyPair("ES256");
  const next = await generateKeyPair("ES256");
  const oldJwk = { ...(await exportJWK(old.publicKey)), kid: "old", alg: "ES256" };
  const nextJwk = { ...(await exportJWK(next.publicKey)), kid: "next", alg: "ES256" };
  served = { keys: [oldJwk] };
  fetches = 0;
  const auth = new JwtAuthenticator({
    key: { kind: "jwks-url", url },
    algorithms: ["ES256"],
    projectClaim: "project_id",
    cacheMaxMs: CACHE_MAX_MS,
  });
  const token = await new SignJWT({ project_id: "p" })
    .setProtectedHeader({ alg: "ES256", kid: "old" })
    .setSubject("s")
    .setExpirationTime(Math.floor(START_MS / 1000) + 365 * 86_400)
    .sign(old.privateKey);
  const bearer = `Bearer ${token}`;

  expect(await auth.authenticate(bearer)).toMatchObject({ project: "p", subject: "s" });
  expect(fetches).toBe(1);
  served = { keys: [nextJwk] }; // the key is withdrawn

  // jose's key set is fresh: each re-verification still finds the old key and remembers the token again.
  at(CACHE_MAX_MS);
  await auth.authenticate(bearer);
  at(JWKS_REUSE_MS - 1);
  await auth.authenticate(bearer);
  expect(fetches).toBe(1);
  // Remembered from that last verification for CACHE_MAX_MS, and not a millisecond more.
  at(JWKS_REUSE_MS - 1 + CACHE_MAX_MS - 1);
  expect(await auth.authenticate(bearer)).toMatchObject({ project: "p", subject: "s" });
  expect(fetches).toBe(1);
  at(JWKS_REUSE_MS - 1 + CACHE_MAX_MS);
  await expect(auth.authenticate(bearer)).rejects.toSatisfy(unauthenticated);
  expect(fetches).toBe(2);
});
