/**
 * The scope claim (`JWT_SCOPE_CLAIM`, default `scope`): a space-separated
 * string (RFC 8693 / RFC 9068) or an array of strings; absent means no scopes,
 * and a claim of any other shape is refused rather than ignored.
 */
import { randomBytes } from "node:crypto";
import { SignJWT } from "jose";
import { describe, expect, test } from "vitest";
import { JwtAuthenticator, mintToken } from "../../src/auth/jwt.js";
import { Failure } from "../../src/services/failure.js";

const secret = new Uint8Array(randomBytes(32));
const auth = (scopeClaim?: string) =>
  new JwtAuthenticator({
    key: { kind: "secret", secret },
    algorithms: ["HS256"],
    projectClaim: "project_id",
    ...(scopeClaim === undefined ? {} : { scopeClaim }),
  });

async function signed(claims: Record<string, unknown>): Promise<string> {
  return new SignJWT({ project_id: "p", ...claims })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject("svc")
    .setExpirationTime("5m")
    .sign(secret);
}

const scopesOf = async (a: JwtAuthenticator, token: string) => [...(await a.authenticate(`Bearer ${token}`)).scopes];

describe("scopes", () => {
  test("a token without the claim has no scopes", async () => {
    expect(await scopesOf(auth(), await signed({}))).toEqual([]);
  });

  test("a space-separated string, extra spaces ignored", async () => {
    expect(await scopesOf(auth(), await signed({ scope: " pstn.gateway  other " }))).toEqual(["pstn.gateway", "other"]);
  });

  test("an array of strings", async () => {
    expect(await scopesOf(auth(), await signed({ scope: ["pstn.gateway", "x"] }))).toEqual(["pstn.gateway", "x"]);
  });

  test("the claim name is configurable; the default claim is then not read", async () => {
    const token = await signed({ scp: "pstn.gateway", scope: "ignored" });
    expect(await scopesOf(auth("scp"), token)).toEqual(["pstn.gateway"]);
  });

  for (const bad of [42, { pstn: true }, ["ok", 7], null]) {
    test(`a claim of another shape is refused: ${JSON.stringify(bad)}`, async () => {
      const failure = await auth()
        .authenticate(`Bearer ${await signed({ scope: bad })}`)
        .catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(Failure);
      expect((failure as Failure).kind).toBe("unauthenticated");
      expect((failure as Failure).detail).toMatch(/"scope" claim/);
    });
  }

  test("mintToken writes the scopes space-separated into the configured claim", async () => {
    const token = await mintToken({
      secret,
      project: "p",
      subject: "s",
      ttlSeconds: 60,
      scopes: ["pstn.gateway", "b"],
      scopeClaim: "scp",
    });
    const payload = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString()) as Record<
      string,
      unknown
    >;
    expect(payload["scp"]).toBe("pstn.gateway b");
    expect(payload["scope"]).toBeUndefined();
    expect(await scopesOf(auth("scp"), token)).toEqual(["pstn.gateway", "b"]);
  });
});
