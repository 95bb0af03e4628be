import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/index.js";
import { configError, SECRET, tempFile } from "./helpers.js";

const JWKS_URL = "https://idp.example/.well-known/jwks.json";
const JWKS_FILE = tempFile("jwks.json", '{"keys": []}');
/** What a JWKS requires beside it (see trusted-token-sources.test.ts). */
const CLAIMS = { JWT_ISSUER: "https://idp.example/", JWT_AUDIENCE: "boardline" };
const PEM = tempFile("tls.pem", "pem bytes");

describe("exactly one JWT key source", () => {
  it.each([
    [{ JWT_SECRET: SECRET, JWT_JWKS_URL: JWKS_URL }, "JWT_JWKS_URL"],
    [{ JWT_SECRET: SECRET, JWT_JWKS_FILE: JWKS_FILE }, "JWT_JWKS_FILE"],
    [{ JWT_JWKS_URL: JWKS_URL, JWT_JWKS_FILE: JWKS_FILE }, "JWT_JWKS_FILE"],
  ])("two sources are refused: %j", (env, variable) => {
    const e = configError(env);
    expect(e.variable).toBe(variable);
    expect(e.message).toMatch(/cannot be combined with JWT_\w+: set one of JWT_SECRET, JWT_JWKS_URL, JWT_JWKS_FILE$/);
  });

  it("each source alone is taken", () => {
    expect(loadConfig({ JWT_JWKS_URL: JWKS_URL, ...CLAIMS }).jwt.key).toEqual({
      kind: "jwks-url",
      url: new URL(JWKS_URL),
    });
    expect(loadConfig({ JWT_JWKS_FILE: JWKS_FILE, ...CLAIMS }).jwt.key).toEqual({ kind: "jwks-file", path: JWKS_FILE });
  });
});

describe("/metrics is on PORT or on METRICS_PORT, not both", () => {
  it("METRICS_ON_PUBLIC_PORT=true refuses a METRICS_PORT beside it", () => {
    const e = configError({ JWT_SECRET: SECRET, METRICS_ON_PUBLIC_PORT: "true", METRICS_PORT: "9090" });
    expect(e.variable).toBe("METRICS_PORT");
    expect(e.message).toBe("METRICS_PORT must not be set with METRICS_ON_PUBLIC_PORT=true (/metrics is on PORT then)");
  });

  it("METRICS_ON_PUBLIC_PORT=false takes METRICS_PORT as set", () => {
    expect(loadConfig({ JWT_SECRET: SECRET, METRICS_ON_PUBLIC_PORT: "false", METRICS_PORT: "9100" }).metricsPort).toBe(
      9100,
    );
  });
});

describe("the algorithms must fit the key source", () => {
  it("defaults: HS256 for a secret, RS256/ES256/EdDSA for a JWKS", () => {
    expect(loadConfig({ JWT_SECRET: SECRET }).jwt.algorithms).toEqual(["HS256"]);
    expect(loadConfig({ JWT_JWKS_URL: JWKS_URL, ...CLAIMS }).jwt.algorithms).toEqual(["RS256", "ES256", "EdDSA"]);
  });

  it("fitting lists are taken", () => {
    expect(loadConfig({ JWT_SECRET: SECRET, JWT_ALGORITHMS: "HS384, HS512" }).jwt.algorithms).toEqual([
      "HS384",
      "HS512",
    ]);
    expect(loadConfig({ JWT_JWKS_FILE: JWKS_FILE, JWT_ALGORITHMS: "PS256,EdDSA", ...CLAIMS }).jwt.algorithms).toEqual([
      "PS256",
      "EdDSA",
    ]);
  });

  it.each([
    [{ JWT_SECRET: SECRET, JWT_ALGORITHMS: "HS256,RS256" }, '"RS256" does not fit the key: JWT_SECRET takes'],
    [{ JWT_JWKS_URL: JWKS_URL, JWT_ALGORITHMS: "HS256", ...CLAIMS }, '"HS256" does not fit the key: a JWKS takes'],
  ])("a misfit is refused: %j", (env, message) => {
    const e = configError(env);
    expect(e.variable).toBe("JWT_ALGORITHMS");
    expect(e.message).toContain(message);
  });
});

describe("production requires Redis and a key source", () => {
  const KEYS = {
    PASSPHRASE_KEYS: Buffer.alloc(32, 1).toString("base64"),
    SECRETS_KEYS: Buffer.alloc(32, 2).toString("base64"),
  };
  it.each([
    [{ NODE_ENV: "production" }, "REDIS_URL", /^REDIS_URL is required when NODE_ENV=production/],
    [{ NODE_ENV: "production", JWT_SECRET: SECRET }, "REDIS_URL", /^REDIS_URL is required/],
    [{ NODE_ENV: "production", REDIS_URL: "redis://r:6379" }, "JWT_SECRET", /^JWT_SECRET \(or JWT_JWKS_URL/],
    [
      { NODE_ENV: "production", REDIS_CLUSTER_NODES: "r:7000" },
      "JWT_SECRET",
      /is required outside demo mode \(demo mode is no Redis and no JWT keys at all\)$/,
    ],
  ])("%j", (env, variable, message) => {
    const e = configError(env);
    expect(e.variable).toBe(variable);
    expect(e.message).toMatch(message);
  });

  it("with both it starts, not as the demo", () => {
    const config = loadConfig({ NODE_ENV: "production", REDIS_URL: "redis://r:6379", JWT_SECRET: SECRET, ...KEYS });
    expect(config).toMatchObject({ production: true, demo: false, host: "0.0.0.0" });
    expect(config.conversionApiBase).toBe("https://api.netless.link");
  });
});

describe("Redis topologies", () => {
  it("Cluster and Sentinel exclude each other", () => {
    const env = { JWT_SECRET: SECRET, REDIS_CLUSTER_NODES: "a:1", REDIS_SENTINELS: "b:2", REDIS_SENTINEL_NAME: "m" };
    expect(configError(env).message).toBe("REDIS_SENTINELS cannot be combined with REDIS_CLUSTER_NODES");
  });

  it("Sentinels need the master's name", () => {
    expect(configError({ JWT_SECRET: SECRET, REDIS_SENTINELS: "b:2" }).message).toBe(
      "REDIS_SENTINEL_NAME is required with REDIS_SENTINELS",
    );
  });

  it("with Cluster or Sentinel, REDIS_URL carries only the credentials and TLS", () => {
    const url = "rediss://user:p%40ss@ignored:1/3";
    expect(loadConfig({ JWT_SECRET: SECRET, REDIS_URL: url, REDIS_CLUSTER_NODES: "a:1" }).redis).toEqual({
      mode: "cluster",
      nodes: [{ host: "a", port: 1 }],
      username: "user",
      password: "p@ss",
      tls: {},
    });
    const sentinel = { JWT_SECRET: SECRET, REDIS_URL: "redis://:pw@x", REDIS_SENTINELS: "s", REDIS_SENTINEL_NAME: "m" };
    expect(loadConfig(sentinel).redis).toEqual({
      mode: "sentinel",
      sentinels: [{ host: "s", port: 26379 }],
      masterName: "m",
      password: "pw",
    });
  });

  it("REDIS_URL alone is one node", () => {
    expect(loadConfig({ JWT_SECRET: SECRET, REDIS_URL: "rediss://r:6380/1" }).redis).toEqual({
      mode: "single",
      url: "rediss://r:6380/1",
    });
  });
});

describe("TLS and the guess limit", () => {
  it("TLS_CERT and TLS_KEY come together", () => {
    expect(configError({ JWT_SECRET: SECRET, TLS_CERT: PEM }).variable).toBe("TLS_KEY");
    expect(configError({ JWT_SECRET: SECRET, TLS_KEY: PEM }).message).toBe(
      "TLS_CERT must be set together with the other of TLS_CERT/TLS_KEY",
    );
    const tls = loadConfig({ JWT_SECRET: SECRET, TLS_CERT: PEM, TLS_KEY: PEM }).tls;
    expect(tls?.cert.toString()).toBe("pem bytes");
    expect(tls?.key.toString()).toBe("pem bytes");
  });

  it("GUESS_LIMIT=0 turns the guess limit off", () => {
    expect(loadConfig({ JWT_SECRET: SECRET, GUESS_LIMIT: "0" }).guessLimit).toBeUndefined();
    expect(loadConfig({ JWT_SECRET: SECRET, GUESS_LIMIT: "3", GUESS_WINDOW_SECONDS: "5" }).guessLimit).toEqual({
      attempts: 3,
      windowSeconds: 5,
      provenSeconds: 600,
    });
  });
});

describe("a project's share of the watches", () => {
  it("is a quarter of MAX_WATCHES, rounded up, unless set", () => {
    expect(loadConfig({ JWT_SECRET: SECRET }).maxWatchesPerProject).toBe(2_500);
    expect(loadConfig({ JWT_SECRET: SECRET, MAX_WATCHES: "60" }).maxWatchesPerProject).toBe(15);
    expect(loadConfig({ JWT_SECRET: SECRET, MAX_WATCHES: "1" }).maxWatchesPerProject).toBe(1);
    expect(
      loadConfig({ JWT_SECRET: SECRET, MAX_WATCHES: "10", MAX_WATCHES_PER_PROJECT: "10" }).maxWatchesPerProject,
    ).toBe(10);
  });

  it("may not be more than MAX_WATCHES: the error names both", () => {
    const e = configError({ JWT_SECRET: SECRET, MAX_WATCHES: "60", MAX_WATCHES_PER_PROJECT: "61" });
    expect(e.variable).toBe("MAX_WATCHES_PER_PROJECT");
    expect(e.message).toMatch(/^MAX_WATCHES_PER_PROJECT \(61\) cannot be more than MAX_WATCHES \(60\)/);
  });
});
