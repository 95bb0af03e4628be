/**
 * The project claim (`JWT_PROJECT_CLAIM`) names Redis keys
 * (`bl:chan:{<project>/<channel>}:…`, `bl:proj:{<project>}:…`), so a token
 * whose project those keys cannot hold is refused: with a `/` it would share
 * another project's channel keys (`a/b` + `c` is `a` + `b/c`), with a brace it
 * would break out of the Cluster hash tag.
 */
import { randomBytes } from "node:crypto";
import { SignJWT } from "jose";
import { describe, expect, test } from "vitest";
import { JwtAuthenticator } from "../../src/auth/jwt.js";
import { Failure } from "../../src/services/failure.js";

const secret = new Uint8Array(randomBytes(32));
const auth = new JwtAuthenticator({ key: { kind: "secret", secret }, algorithms: ["HS256"], projectClaim: "tenant" });

function signed(project: unknown): Promise<string> {
  return new SignJWT({ tenant: project })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject("svc")
    .setExpirationTime("5m")
    .sign(secret);
}

describe("the project claim", () => {
  for (const good of ["pa", "proj-1", "ünïcode project", "a.b:c"]) {
    test(`${JSON.stringify(good)} is accepted as it is`, async () => {
      expect((await auth.authenticate(`Bearer ${await signed(good)}`)).project).toBe(good);
    });
  }

  for (const bad of ["", "pa/x", "/", "pa/", "{pa}", "pa{", "}pa", "p\u0000a", "pa\n", "p\u007fa"]) {
    test(`${JSON.stringify(bad)} is refused as unauthenticated, naming the claim`, async () => {
      const failure = await auth.authenticate(`Bearer ${await signed(bad)}`).catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(Failure);
      expect((failure as Failure).kind).toBe("unauthenticated");
      expect((failure as Failure).detail).toMatch(/"tenant"/);
    });
  }

  test("a refused token stays refused (it is not remembered as verified)", async () => {
    const token = await signed("pa/x");
    for (let i = 0; i < 2; i++) {
      await expect(auth.authenticate(`Bearer ${token}`)).rejects.toBeInstanceOf(Failure);
    }
  });
});
