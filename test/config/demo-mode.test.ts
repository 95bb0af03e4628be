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

  it("is off in production", () => {
    expect(configError({ NODE_ENV: "production" }).variable).toBe("REDIS_URL");
  });
});
