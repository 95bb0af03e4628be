/**
 * The simulator's token check: opaque tokens it was given are accepted as they
 * are; signed `NETLESSSDK_` tokens are verified against the key pairs it was
 * given, and only some roles may start conversions. Tokens are never logged.
 */
import { InvalidSdkTokenError, SDK_TOKEN_PREFIX, type TokenRole, verifySdkToken } from "../../netless/sdk-token.js";
import type { SimulatorCredentials } from "./options.js";

const WRITE_ROLES: ReadonlySet<TokenRole> = new Set(["admin", "writer"]);

/** Undefined when the token may make the request (`write`: one that starts a conversion), else the reason. */
export type TokenCheck = (token: string | undefined, write: boolean) => string | undefined;

export function tokenCheck(credentials: SimulatorCredentials, now: () => number): TokenCheck {
  const sdkTokens = new Set(credentials.sdkTokens ?? []);
  const secrets = new Map((credentials.keys ?? []).map((k) => [k.accessKey, k.secretKey]));
  return (token, write) => {
    if (token === undefined || token === "") return "missing token";
    if (sdkTokens.has(token)) return undefined;
    if (!token.startsWith(SDK_TOKEN_PREFIX)) return "invalid token";
    try {
      const claims = verifySdkToken(token, (ak) => secrets.get(ak), now());
      if (write && !WRITE_ROLES.has(claims.role)) return "the token's role may not start conversions";
      return undefined;
    } catch (error) {
      if (error instanceof InvalidSdkTokenError) return `invalid token: ${error.reason}`;
      throw error;
    }
  };
}
