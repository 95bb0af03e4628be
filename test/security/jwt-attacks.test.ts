/**
 * Tokens that must never be accepted, against a real server: each is a 401 in
 * the documented shape, and nothing is written. One server trusts an HS256
 * secret, one an RSA/EC JWKS file with an issuer and audience.
 */
import { generateKeyPairSync, createHmac, randomBytes } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportJWK, SignJWT, type JWK } from "jose";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { JwtAuthenticator } from "../../src/auth/jwt.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { parseBody, postJson } from "../harness/http.js";
import { muteBody } from "../harness/request-bodies.js";
import { ROUTES } from "../harness/routes.js";

const b64 = (v: unknown) => Buffer.from(typeof v === "string" ? v : JSON.stringify(v)).toString("base64url");
const now = () => Math.floor(Date.now() / 1000);

let hs: Boardline;
let rs: Boardline;
const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
const ec = generateKeyPairSync("ec", { namedCurve: "P-256" });
const otherRsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
let rsaJwk: JWK;
// A server that records any request: jku / x5u must never be fetched.
let fetched = 0;
const trap = http.createServer((_req, res) => {
  fetched++;
  res.end("{}");
});
let trapUrl = "";

beforeAll(async () => {
  await new Promise<void>((r) => trap.listen(0, "127.0.0.1", r));
  trapUrl = `http://127.0.0.1:${(trap.address() as AddressInfo).port}/jwks.json`;
  rsaJwk = { ...(await exportJWK(rsa.publicKey)), kid: "rsa-1", alg: "RS256", use: "sig" };
  const ecJwk = { ...(await exportJWK(ec.publicKey)), kid: "ec-1", alg: "ES256", use: "sig" };
  const dir = mkdtempSync(join(tmpdir(), "bl-jwks-"));
  const file = join(dir, "jwks.json");
  writeFileSync(file, JSON.stringify({ keys: [rsaJwk, ecJwk] }));
  hs = await startBoardline({ store: "memory" });
  rs = await startBoardline({
    store: "memory",
    authenticator: new JwtAuthenticator({
      key: { kind: "jwks-file", path: file },
      algorithms: ["RS256", "ES256"],
      issuer: "https://issuer.test",
      audience: "boardline",
      projectClaim: "project_id",
    }),
  });
});

afterAll(async () => {
  await hs.close();
  await rs.close();
  await new Promise((r) => trap.close(r));
});

/** A mute with this Authorization header (none when undefined). */
async function mute(bl: Boardline, authorization: string | undefined) {
  const auth = authorization === undefined ? { token: null } : { authorization };
  const res = await postJson(bl, ROUTES.mute, muteBody(bl, { uid: "victim" }), auth);
  return { status: res.status, body: parseBody(res), wwwAuthenticate: res.headers.get("www-authenticate") };
}

async function expectRejected(bl: Boardline, token: string) {
  const before = await bl.store.getMuteEvents(bl.world.project, bl.world.channel, 1000);
  const r = await mute(bl, `Bearer ${token}`);
  expect(r.status).toBe(401);
  expect(r.wwwAuthenticate).toMatch(/^Bearer/);
  expect(r.body).toEqual({ error: { code: 401, message: expect.any(String) } });
  expect(await bl.store.getMuteEvents(bl.world.project, bl.world.channel, 1000)).toEqual(before);
}

const claims = (bl: Boardline, extra: Record<string, unknown> = {}) => ({
  project_id: bl.world.project,
  sub: "attacker",
  exp: now() + 300,
  ...extra,
});

function hmacToken(header: object, payload: object, key: string | Buffer | Uint8Array): string {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${createHmac("sha256", key).update(input).digest("base64url")}`;
}

describe("HS256 server", () => {
  test("a good token is accepted (the control)", async () => {
    const r = await mute(hs, `Bearer ${hmacToken({ alg: "HS256", typ: "JWT" }, claims(hs), hs.secret)}`);
    expect(r.status).toBe(200);
  });

  test.each([
    ["alg none, no signature", () => `${b64({ alg: "none", typ: "JWT" })}.${b64(claims(hs))}.`],
    [
      "alg none with the real signature",
      () => {
        const good = hmacToken({ alg: "HS256" }, claims(hs), hs.secret).split(".");
        return `${b64({ alg: "none" })}.${good[1]}.${good[2]}`;
      },
    ],
    ["wrong key", () => hmacToken({ alg: "HS256" }, claims(hs), randomBytes(32))],
    ["expired", () => hmacToken({ alg: "HS256" }, claims(hs, { exp: now() - 120 }), hs.secret)],
    ["not yet valid", () => hmacToken({ alg: "HS256" }, claims(hs, { nbf: now() + 600 }), hs.secret)],
    [
      "missing exp",
      () => {
        const { exp: _exp, ...rest } = claims(hs);
        return hmacToken({ alg: "HS256" }, rest, hs.secret);
      },
    ],
    ["missing project claim", () => hmacToken({ alg: "HS256" }, { sub: "x", exp: now() + 60 }, hs.secret)],
    ["missing sub", () => hmacToken({ alg: "HS256" }, { project_id: hs.world.project, exp: now() + 60 }, hs.secret)],
    [
      "tampered payload",
      () => {
        const [h, , s] = hmacToken({ alg: "HS256" }, claims(hs), hs.secret).split(".");
        return `${h}.${b64(claims(hs, { project_id: hs.world.otherProject }))}.${s}`;
      },
    ],
    [
      "HS512 (not allowed)",
      () => {
        const input = `${b64({ alg: "HS512" })}.${b64(claims(hs))}`;
        return `${input}.${createHmac("sha512", hs.secret).update(input).digest("base64url")}`;
      },
    ],
    ["header only", () => b64({ alg: "HS256" })],
    ["two parts", () => `${b64({ alg: "HS256" })}.${b64(claims(hs))}`],
    ["four parts", () => `${hmacToken({ alg: "HS256" }, claims(hs), hs.secret)}.AAAA`],
    ["100 KB token", () => hmacToken({ alg: "HS256" }, claims(hs, { pad: "x".repeat(75_000) }), hs.secret)],
    ["not base64url", () => "a$b.c%d.e^f"],
    ["empty", () => ""],
  ])("%s → 401", async (_name, make) => {
    await expectRejected(hs, make());
  });

  test("malformed Authorization headers → 401", async () => {
    const good = hmacToken({ alg: "HS256" }, claims(hs), hs.secret);
    for (const header of [good, `Basic ${good}`, `Bearer`, `Bearer  `, `Token ${good}`, `Bearer ${good} extra`]) {
      const r = await mute(hs, header);
      expect(r.status, header.slice(0, 20)).toBe(401);
    }
    expect((await mute(hs, undefined)).status).toBe(401);
  });
});

describe("JWKS server (RS256/ES256, issuer and audience)", () => {
  const good = (bl: Boardline, header: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) =>
    new SignJWT(claims(bl, { iss: "https://issuer.test", aud: "boardline", ...extra }))
      .setProtectedHeader({ alg: "RS256", kid: "rsa-1", ...header })
      .sign(rsa.privateKey);

  test("good RS256 and ES256 tokens are accepted (the control)", async () => {
    expect((await mute(rs, `Bearer ${await good(rs)}`)).status).toBe(200);
    const es = await new SignJWT(claims(rs, { iss: "https://issuer.test", aud: "boardline" }))
      .setProtectedHeader({ alg: "ES256", kid: "ec-1" })
      .sign(ec.privateKey);
    expect((await mute(rs, `Bearer ${es}`)).status).toBe(200);
  });

  test("HS256 signed with the RSA public key (algorithm confusion) → 401", async () => {
    const pem = rsa.publicKey.export({ type: "spki", format: "pem" });
    await expectRejected(
      rs,
      hmacToken({ alg: "HS256", kid: "rsa-1" }, claims(rs, { iss: "https://issuer.test", aud: "boardline" }), pem),
    );
    const jwkAsSecret = JSON.stringify(rsaJwk);
    await expectRejected(
      rs,
      hmacToken({ alg: "HS256" }, claims(rs, { iss: "https://issuer.test", aud: "boardline" }), jwkAsSecret),
    );
  });

  test("signed by another RSA key with a known kid → 401", async () => {
    const t = await new SignJWT(claims(rs, { iss: "https://issuer.test", aud: "boardline" }))
      .setProtectedHeader({ alg: "RS256", kid: "rsa-1" })
      .sign(otherRsa.privateKey);
    await expectRejected(rs, t);
  });

  test("unknown kid → 401", async () => {
    const t = await new SignJWT(claims(rs, { iss: "https://issuer.test", aud: "boardline" }))
      .setProtectedHeader({ alg: "RS256", kid: "nobody" })
      .sign(otherRsa.privateKey);
    await expectRejected(rs, t);
  });

  test("wrong issuer, wrong audience, no issuer → 401", async () => {
    await expectRejected(rs, await good(rs, {}, { iss: "https://evil.test" }));
    await expectRejected(rs, await good(rs, {}, { aud: "someone-else" }));
    const noIss = await new SignJWT(claims(rs, { aud: "boardline" }))
      .setProtectedHeader({ alg: "RS256", kid: "rsa-1" })
      .sign(rsa.privateKey);
    await expectRejected(rs, noIss);
  });

  test("jku / x5u / embedded jwk headers are never fetched nor trusted", async () => {
    const attackerJwk = await exportJWK(otherRsa.publicKey);
    for (const header of [
      { jku: trapUrl, kid: "evil" },
      { x5u: trapUrl, kid: "evil" },
      { jwk: attackerJwk, kid: "evil" },
    ]) {
      const t = await new SignJWT(claims(rs, { iss: "https://issuer.test", aud: "boardline" }))
        .setProtectedHeader({ alg: "RS256", ...header })
        .sign(otherRsa.privateKey);
      await expectRejected(rs, t);
    }
    expect(fetched).toBe(0);
  });
});
