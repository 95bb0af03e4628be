/**
 * The verified-token cache: a token is served from it only until its `exp`,
 * and the cache never grows past its bound.
 */
import { randomBytes } from "node:crypto";
import { expect, test } from "vitest";
import { JwtAuthenticator, mintToken, VERIFIED_CACHE_SIZE } from "../../src/auth/jwt.js";
import { Failure } from "../../src/services/failure.js";
import { sleep } from "../harness/sleep.js";

const secret = new Uint8Array(randomBytes(32));
const auth = () =>
  new JwtAuthenticator({
    key: { kind: "secret", secret },
    algorithms: ["HS256"],
    projectClaim: "project_id",
    clockToleranceSeconds: 0,
  });

test("a cached token stops working at its exp", async () => {
  const a = auth();
  const token = await mintToken({ secret, project: "p", subject: "s", ttlSeconds: 1 });
  expect(await a.authenticate(`Bearer ${token}`)).toMatchObject({ project: "p", subject: "s" });
  expect(await a.authenticate(`Bearer ${token}`)).toMatchObject({ project: "p", subject: "s" });
  // exp has one-second resolution: wait past it.
  await sleep(2100);
  await expect(a.authenticate(`Bearer ${token}`)).rejects.toSatisfy(
    (e) => e instanceof Failure && e.kind === "unauthenticated",
  );
});

test("the cache is bounded and a changed token is verified afresh", async () => {
  const a = auth();
  const token = await mintToken({ secret, project: "p", subject: "s", ttlSeconds: 60 });
  await a.authenticate(`Bearer ${token}`);
  const [h, p, s] = token.split(".");
  const tampered = `${h}.${Buffer.from(JSON.stringify({ project_id: "other", sub: "s", exp: 9_999_999_999 })).toString("base64url")}.${s}`;
  expect(p).not.toBe(tampered.split(".")[1]);
  await expect(a.authenticate(`Bearer ${tampered}`)).rejects.toBeInstanceOf(Failure);
  const cache = (a as unknown as { verified: Map<string, unknown> }).verified;
  for (let i = 0; i < VERIFIED_CACHE_SIZE + 50; i++) {
    await a.authenticate(`Bearer ${await mintToken({ secret, project: "p", subject: `s${i}`, ttlSeconds: 60 })}`);
  }
  expect(cache.size).toBe(VERIFIED_CACHE_SIZE);
}, 60_000);
