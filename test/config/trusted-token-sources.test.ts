/**
 * Where tokens may come from: a remote JWKS only over https (plain http only
 * to this machine's loopback).
 * Hosts under `.invalid` are never resolved: start-up refuses them before any fetch.
 */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/index.js";
import { configError } from "./helpers.js";

const CLAIMS = { JWT_ISSUER: "https://idp.invalid/", JWT_AUDIENCE: "boardline" };

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
