/**
 * Where tokens may come from: a remote JWKS only over https (plain http only
 * to this machine's loopback), and an issuer and an audience required with any
 * JWKS (an identity provider shared with other applications signs their
 * tokens with the same keys), and JWT_TYPES, the `typ` headers a token may carry.
 * Hosts under `.invalid` are never resolved: start-up refuses them before any fetch.
 */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/index.js";
import { configError, SECRET, tempFile } from "./helpers.js";

const CLAIMS = { JWT_ISSUER: "https://idp.invalid/", JWT_AUDIENCE: "boardline" };
const JWKS_FILE = tempFile("jwks.json", '{"keys": []}');

describe("JWT_JWKS_URL must be https, but for a loopback host", () => {
  it.each([
    "http://idp.invalid/.well-known/jwks.json",
    "http://localhost.invalid/jwks.json",
    "HTTP://IDP.INVALID:8080/jwks",
    "http://127.example.invalid/jwks",
  ])("plain http to another host is refused, saying why: %s", (url) => {
    const e = configError({ JWT_JWKS_URL: url, ...CLAIMS });
    expect(e.variable).toBe("JWT_JWKS_URL");
    expect(e.message).toMatch(/^JWT_JWKS_URL must be an https URL \(http only for a loopback host/);
    expect(e.message).toContain("anyone on the way could swap in keys of their own");
  });

  it.each([
    "https://idp.invalid/.well-known/jwks.json",
    "http://127.0.0.1:9/jwks.json",
    "http://127.8.9.10/jwks.json",
    "http://localhost:8080/jwks.json",
    "http://[::1]:9/jwks.json",
  ])("%s is taken", (url) => {
    expect(loadConfig({ JWT_JWKS_URL: url, ...CLAIMS }).jwt.key).toEqual({ kind: "jwks-url", url: new URL(url) });
  });
});

describe("a JWKS needs JWT_ISSUER and JWT_AUDIENCE", () => {
  const sources = [
    ["JWT_JWKS_URL", { JWT_JWKS_URL: "https://idp.invalid/jwks" }],
    ["JWT_JWKS_FILE", { JWT_JWKS_FILE: JWKS_FILE }],
  ] as const;

  it.each(sources)("%s without either is refused, naming both and why", (source, env) => {
    const e = configError(env);
    expect(e.variable).toBe("JWT_ISSUER");
    expect(e.message).toBe(
      `JWT_ISSUER and JWT_AUDIENCE are required with ${source}: a shared identity provider mints tokens for other applications too`,
    );
  });

  it.each(sources)("%s with only one of them is refused, naming the other", (source, env) => {
    const noAudience = configError({ ...env, JWT_ISSUER: CLAIMS.JWT_ISSUER });
    expect(noAudience.variable).toBe("JWT_AUDIENCE");
    expect(noAudience.message).toMatch(new RegExp(`^JWT_AUDIENCE is required with ${source}, as is JWT_ISSUER: `));
    const noIssuer = configError({ ...env, JWT_AUDIENCE: CLAIMS.JWT_AUDIENCE });
    expect(noIssuer.variable).toBe("JWT_ISSUER");
    expect(noIssuer.message).toMatch(new RegExp(`^JWT_ISSUER is required with ${source}, as is JWT_AUDIENCE: `));
  });

  it.each(sources)("%s with both is taken", (_source, env) => {
    expect(loadConfig({ ...env, ...CLAIMS }).jwt).toMatchObject({
      issuer: "https://idp.invalid/",
      audience: "boardline",
    });
  });

  it("JWT_SECRET needs neither: its tokens are boardline's own", () => {
    expect(loadConfig({ JWT_SECRET: SECRET }).jwt).toMatchObject({ issuer: undefined, audience: undefined });
  });
});

describe("JWT_TYPES", () => {
  it("unset: no typ is required", () => {
    expect(loadConfig({ JWT_SECRET: SECRET }).jwt.types).toBeUndefined();
  });

  it("a comma-separated list of media types, as set", () => {
    const env = { JWT_SECRET: SECRET, JWT_TYPES: " at+jwt, JWT ,application/at+jwt," };
    expect(loadConfig(env).jwt.types).toEqual(["at+jwt", "JWT", "application/at+jwt"]);
  });

  it.each(["at jwt", "a/b/c", "/jwt", "jwt;v=1"])("refuses what is no media type: %j", (item) => {
    const e = configError({ JWT_SECRET: SECRET, JWT_TYPES: `JWT,${item}` });
    expect(e.variable).toBe("JWT_TYPES");
    expect(e.message).toContain(`is not a media type like at+jwt or JWT (got "${item}")`);
  });
});
