/**
 * CONVERSION_WEBHOOK_BASE and CONVERSION_WEBHOOK_SECRET: the base's shape,
 * the secret's length, and the rules that tie them together (and to
 * JWT_SECRET, CONVERSION_API and demo mode).
 */
import { DEVELOPMENT_KEYS } from "../harness/development-keys.js";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/index.js";
import { configError, SECRET } from "./helpers.js";

const HOOK_SECRET = "w".repeat(32);
const BASE = "https://boardline.example.com";
const on = (over: Record<string, string> = {}) => ({
  JWT_SECRET: SECRET,
  CONVERSION_WEBHOOK_BASE: BASE,
  CONVERSION_WEBHOOK_SECRET: HOOK_SECRET,
  ...over,
});

describe("conversion webhooks", () => {
  it("are off unless CONVERSION_WEBHOOK_BASE is set", () => {
    expect(loadConfig({ JWT_SECRET: SECRET }).conversionWebhook).toBeUndefined();
    expect(loadConfig({}).conversionWebhook).toBeUndefined();
    expect(loadConfig(on({ CONVERSION_WEBHOOK_BASE: " ", CONVERSION_WEBHOOK_SECRET: "" })).conversionWebhook).toBe(
      undefined,
    );
  });

  it("take the base (without a trailing slash) and the secret's bytes, the secret untrimmed", () => {
    expect(loadConfig(on()).conversionWebhook).toEqual({ base: BASE, secret: new TextEncoder().encode(HOOK_SECRET) });
    const spaced = ` ${"x".repeat(31)} `;
    expect(
      loadConfig(on({ CONVERSION_WEBHOOK_BASE: `${BASE}/edge/boardline/`, CONVERSION_WEBHOOK_SECRET: spaced }))
        .conversionWebhook,
    ).toEqual({ base: `${BASE}/edge/boardline`, secret: new TextEncoder().encode(spaced) });
  });

  it.each([
    "http://127.0.0.1:8080",
    "http://127.8.9.10",
    "http://localhost:9",
    "http://[::1]:8080",
    "https://10.0.0.1:8443/b",
  ])("accept %s", (base) => {
    expect(loadConfig(on({ CONVERSION_WEBHOOK_BASE: base })).conversionWebhook?.base).toBe(base);
  });

  it.each([
    ["boardline.example.com", "must be an absolute https URL"],
    ["/v1", "must be an absolute https URL"],
    ["http://boardline.example.com", "must be an https URL (http only for a loopback host"],
    ["http://10.0.0.1:8080", "must be an https URL (http only for a loopback host"],
    ["ftp://127.0.0.1", "must be an https URL"],
    [`${BASE}/?`, "must not have a query or a fragment"],
    [`${BASE}?a=1`, "must not have a query or a fragment"],
    [`${BASE}/#x`, "must not have a query or a fragment"],
    ["https://ops:hunter2@boardline.example.com", "must not carry a user name or password"],
  ])("refuse the base %s", (base, message) => {
    const e = configError(on({ CONVERSION_WEBHOOK_BASE: base }));
    expect(e.variable).toBe("CONVERSION_WEBHOOK_BASE");
    expect(e.message).toContain(message);
    expect(e.message).not.toContain("hunter2");
  });

  it("need the secret outside demo mode, production or not", () => {
    const e = configError(on({ CONVERSION_WEBHOOK_SECRET: "" }));
    expect(e.variable).toBe("CONVERSION_WEBHOOK_SECRET");
    expect(e.message).toMatch(/^CONVERSION_WEBHOOK_SECRET is required with CONVERSION_WEBHOOK_BASE outside demo mode/);
    const production = { NODE_ENV: "production", REDIS_URL: "redis://r:6379", ...DEVELOPMENT_KEYS };
    expect(configError(on({ ...production, CONVERSION_WEBHOOK_SECRET: "" })).variable).toBe(
      "CONVERSION_WEBHOOK_SECRET",
    );
    expect(loadConfig(on(production)).conversionWebhook?.base).toBe(BASE);
  });

  it("in demo mode need no secret (a random one is made at start-up)", () => {
    const config = loadConfig({ CONVERSION_WEBHOOK_BASE: "http://127.0.0.1:8080" });
    expect(config.demo).toBe(true);
    expect(config.conversionWebhook).toEqual({ base: "http://127.0.0.1:8080", secret: undefined });
  });

  it("refuse a secret without a base, a short one, and the JWT secret", () => {
    expect(configError({ JWT_SECRET: SECRET, CONVERSION_WEBHOOK_SECRET: HOOK_SECRET }).message).toBe(
      "CONVERSION_WEBHOOK_SECRET is set but CONVERSION_WEBHOOK_BASE is not (the secret only signs webhook URLs)",
    );
    expect(configError(on({ CONVERSION_WEBHOOK_SECRET: "x".repeat(31) })).message).toBe(
      "CONVERSION_WEBHOOK_SECRET must be at least 32 bytes",
    );
    expect(configError(on({ CONVERSION_WEBHOOK_SECRET: SECRET })).message).toBe(
      "CONVERSION_WEBHOOK_SECRET must not be the same as JWT_SECRET",
    );
  });

  it("need the projector API", () => {
    expect(configError(on({ CONVERSION_API: "legacy" })).message).toBe(
      "CONVERSION_WEBHOOK_BASE needs CONVERSION_API=projector (the legacy API has no webhooks)",
    );
  });
});
