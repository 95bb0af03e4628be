/**
 * The simulator's token check: opaque tokens it was given are accepted as they
 * are; signed `NETLESSSDK_` tokens are verified against the key pairs it was
 * given, and only some roles may start conversions. Tokens are never logged.
 *
 * A token accepted names its project, which the backend's limits are kept per:
 * an opaque token is a project of its own, a signed one belongs to its access
 * key's. The project is named by a SHA-256 of that identity, so nothing kept
 * or shown per project reveals a token.
 */
import { createHash } from "node:crypto";
import { InvalidSdkTokenError, SDK_TOKEN_PREFIX, type TokenRole, verifySdkToken } from "../../netless/sdk-token.js";
import type { SimulatorCredentials } from "./options.js";

const WRITE_ROLES: ReadonlySet<TokenRole> = new Set(["admin", "writer"]);

/** The token's project (hex SHA-256 of its identity) when it may make the request, else why not. */
export type TokenVerdict = { readonly project: string } | { readonly refusal: string };

/** Checks a token for a request (`write`: one that starts a conversion). */
export type TokenCheck = (token: string | undefined, write: boolean) => TokenVerdict;

export function tokenCheck(credentials: SimulatorCredentials, now: () => number): TokenCheck {
  const sdkTokens = new Set(credentials.sdkTokens ?? []);
  const secrets = new Map((credentials.keys ?? []).map((k) => [k.accessKey, k.secretKey]));
  return (token, write) => {
    if (token === undefined || token === "") return { refusal: "missing token" };
    if (sdkTokens.has(token)) return { project: projectOf(token) };
    if (!token.startsWith(SDK_TOKEN_PREFIX)) return { refusal: "invalid token" };
    try {
      const claims = verifySdkToken(token, (ak) => secrets.get(ak), now());
      if (write && !WRITE_ROLES.has(claims.role)) return { refusal: "the token's role may not start conversions" };
      return { project: projectOf(claims.ak) };
    } catch (error) {
      if (error instanceof InvalidSdkTokenError) return { refusal: `invalid token: ${error.reason}` };
      throw error;
    }
  };
}

function projectOf(identity: string): string {
  return createHash("sha256").update(identity).digest("hex");
}
