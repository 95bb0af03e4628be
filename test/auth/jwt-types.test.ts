/**
 * JWT_TYPES: the `typ` headers a token may carry (RFC 8725 §3.11), e.g.
 * `at+jwt` for RFC 9068 access tokens, so an ID token or another kind of JWT
 * signed by the same identity provider is not taken for an access token.
 * Compared as RFC 7515 §4.1.9 says media types are: without regard to case, and
 * `application/` may be left out. Unset: any `typ`, or none.
 */
import { randomBytes } from "node:crypto";
import { decodeProtectedHeader, SignJWT } from "jose";
import { describe, expect, test } from "vitest";
import { JwtAuthenticator, mintToken } from "../../src/auth/jwt.js";
import { Failure } from "../../src/services/failure.js";
import { cliRunner } from "../cli/run-cli.js";
import { uniquePrefix } from "../harness/redis-url.js";

const secret = new Uint8Array(randomBytes(32));
const auth = (types?: readonly string[]) =>
  new JwtAuthenticator({
    key: { kind: "secret", secret },
    algorithms: ["HS256"],
    projectClaim: "project_id",
    ...(types === undefined ? {} : { types }),
  });

function signed(typ: string | undefined): Promise<string> {
  return new SignJWT({ project_id: "p" })
    .setProtectedHeader(typ === undefined ? { alg: "HS256" } : { alg: "HS256", typ })
    .setSubject("svc")
    .setExpirationTime("5m")
    .sign(secret);
}

async function refusal(a: JwtAuthenticator, token: string): Promise<Failure> {
  const failure = await a.authenticate(`Bearer ${token}`).catch((e: unknown) => e);
  expect(failure).toBeInstanceOf(Failure);
  return failure as Failure;
}

describe("JWT_TYPES", () => {
  const accessTokens = auth(["at+jwt", "JWT"]);

  for (const typ of ["at+jwt", "JWT", "jwt", "AT+JWT", "application/at+jwt", "Application/JWT"]) {
    test(`typ ${JSON.stringify(typ)} is one of at+jwt, JWT`, async () => {
      expect((await accessTokens.authenticate(`Bearer ${await signed(typ)}`)).project).toBe("p");
    });
  }

  for (const typ of ["dpop+jwt", "secevent+jwt", "JOSE", "application/jwt+at", "", undefined]) {
    test(`typ ${JSON.stringify(typ)} is refused (401)`, async () => {
      const failure = await refusal(accessTokens, await signed(typ));
      expect(failure.kind).toBe("unauthenticated");
      expect(failure.detail).toBe('the token\'s "typ" header is not one of at+jwt, JWT');
    });
  }

  test("a refused typ is refused every time: the refusal is not remembered as a caller", async () => {
    const token = await signed("dpop+jwt");
    for (let i = 0; i < 2; i++) expect((await refusal(accessTokens, token)).kind).toBe("unauthenticated");
  });

  test("unset: any typ, or none, as before", async () => {
    for (const typ of ["dpop+jwt", "at+jwt", undefined]) {
      expect((await auth().authenticate(`Bearer ${await signed(typ)}`)).project).toBe("p");
    }
  });

  test("mintToken writes the typ it is given (JWT by default), so a minted token meets JWT_TYPES", async () => {
    const atOnly = auth(["at+jwt"]);
    const minted = await mintToken({ secret, project: "p", subject: "op", ttlSeconds: 60, typ: "at+jwt" });
    expect((await atOnly.authenticate(`Bearer ${minted}`)).subject).toBe("op");
    const plain = await mintToken({ secret, project: "p", subject: "op", ttlSeconds: 60 });
    expect((await refusal(atOnly, plain)).kind).toBe("unauthenticated");
  });
});

describe("boardline token mint", () => {
  const { ok } = cliRunner(() => ({ prefix: uniquePrefix("jwt-types"), jwtSecret: "t".repeat(40) }));

  test("writes the first of JWT_TYPES as the typ, and JWT without it", async () => {
    const typOf = async (env: Record<string, string>) =>
      decodeProtectedHeader((await ok(["token", "mint", "--project", "p"], { env })).trim()).typ;
    expect(await typOf({ JWT_TYPES: "at+jwt,JWT" })).toBe("at+jwt");
    expect(await typOf({})).toBe("JWT");
  });
});
