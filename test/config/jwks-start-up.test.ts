/**
 * The real process in production refuses an untrusted token source at start-up,
 * before it serves or fetches anything: a plain-http JWKS URL to another host
 * (one under `.invalid`, which no resolver answers, so nothing leaves this
 * machine), and a JWKS without JWT_ISSUER and JWT_AUDIENCE. A plain-http JWKS
 * on loopback, with both, starts.
 */
import { afterAll, describe, expect, it } from "vitest";
import { eventually } from "../harness/eventually.js";
import { type MainProcess, startMainProcess } from "../harness/main-process.js";
import { deleteKeysWithPrefix, redisUrl, uniquePrefix } from "../harness/redis-url.js";

const prefix = uniquePrefix("jwks-start-up");
const PRODUCTION = { NODE_ENV: "production", REDIS_KEY_PREFIX: prefix, LOG_LEVEL: "info" };
const CLAIMS = { JWT_ISSUER: "https://idp.invalid/", JWT_AUDIENCE: "boardline" };

/** What the process printed when it exited without ever serving. */
async function refusal(env: Record<string, string>): Promise<string> {
  const started = await startMainProcess({ ...PRODUCTION, REDIS_URL: redisUrl(), ...env }).then(
    (main) => {
      main.proc.kill("SIGKILL");
      return undefined;
    },
    (e: unknown) => String(e),
  );
  if (started === undefined) throw new Error("it started");
  return started;
}

describe("the real process with a JWKS", () => {
  let main: MainProcess | undefined;
  afterAll(async () => {
    main?.proc.kill("SIGKILL");
    await deleteKeysWithPrefix(redisUrl(), prefix);
  });

  it("refuses a plain-http JWT_JWKS_URL to a host that is not loopback, naming it", async () => {
    const out = await refusal({ JWT_JWKS_URL: "http://idp.invalid/.well-known/jwks.json", ...CLAIMS });
    expect(out).toContain("boardline: invalid configuration: JWT_JWKS_URL must be an https URL");
  });

  it("refuses a JWKS without JWT_ISSUER and JWT_AUDIENCE, naming both", async () => {
    const out = await refusal({ JWT_JWKS_URL: "https://idp.invalid/.well-known/jwks.json" });
    expect(out).toContain(
      "boardline: invalid configuration: JWT_ISSUER and JWT_AUDIENCE are required with JWT_JWKS_URL",
    );
  });

  it("starts with a plain-http JWKS on loopback, an issuer and an audience", async () => {
    main = await startMainProcess({
      ...PRODUCTION,
      REDIS_URL: redisUrl(),
      JWT_JWKS_URL: "http://127.0.0.1:9/jwks.json",
      ...CLAIMS,
    });
    const url = `${main.url}/readyz`;
    await eventually(async () => (await fetch(url)).status === 200, 10_000, "/readyz 200");
  });
});
