import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/index.js";
import { configError, SECRET } from "./helpers.js";

describe("demo mode means no store and no key source at all", () => {
  it("is on with nothing configured", () => {
    const config = loadConfig({});
    expect(config.demo).toBe(true);
    expect(config.redis).toBeUndefined();
    expect(config.jwt.key).toBeUndefined();
  });

  it.each([
    ["REDIS_URL", { REDIS_URL: "redis://127.0.0.1:6379" }],
    ["REDIS_CLUSTER_NODES", { REDIS_CLUSTER_NODES: "127.0.0.1:7000" }],
    ["REDIS_SENTINELS", { REDIS_SENTINELS: "127.0.0.1:26379", REDIS_SENTINEL_NAME: "mymaster" }],
  ])("is off with %s, and a missing key source is a start-up error naming it", (_name, env) => {
    const e = configError(env);
    expect(e.variable).toBe("JWT_SECRET");
    expect(e.message).toMatch(/^JWT_SECRET \(or JWT_JWKS_URL \/ JWT_JWKS_FILE\) is required/);
    expect(e.message).not.toContain("\n");
  });

  it("is off with a key source alone (in-memory store, no seed)", () => {
    const config = loadConfig({ JWT_SECRET: SECRET });
    expect(config.demo).toBe(false);
    expect(config.redis).toBeUndefined();
  });

  it("runs the telephone-gateway simulator every 2 s unless DEMO_PHONE_GATEWAY_MS says otherwise (0: off)", () => {
    expect(loadConfig({}).demoPhoneGatewayMs).toBe(2000);
    expect(loadConfig({ DEMO_PHONE_GATEWAY_MS: "250" }).demoPhoneGatewayMs).toBe(250);
    expect(loadConfig({ DEMO_PHONE_GATEWAY_MS: "0" }).demoPhoneGatewayMs).toBe(0);
    expect(loadConfig({ JWT_SECRET: SECRET, DEMO_PHONE_GATEWAY_MS: "250" }).demoPhoneGatewayMs).toBe(0);
    expect(configError({ DEMO_PHONE_GATEWAY_MS: "-1" }).variable).toBe("DEMO_PHONE_GATEWAY_MS");
  });

  it("is off in production", () => {
    expect(configError({ NODE_ENV: "production" }).variable).toBe("REDIS_URL");
  });
});
