/**
 * The Redis TLS settings (REDIS_TLS_CA, REDIS_TLS_CERT, REDIS_TLS_KEY,
 * REDIS_TLS_SERVERNAME) and the Sentinels' credentials
 * (REDIS_SENTINEL_USERNAME, REDIS_SENTINEL_PASSWORD): what each deployment's
 * connection gets, and the rules that tie them to the rest.
 */
import { describe, expect, it } from "vitest";
import { loadRedisSettings } from "../../src/config/index.js";
import { configError, SECRET, tempFile } from "./helpers.js";

const CA = tempFile("ca.pem", "ca bytes");
const CERT = tempFile("client.pem", "cert bytes");
const KEY = tempFile("client-key.pem", "key bytes");
const SENTINELS = { REDIS_SENTINELS: "10.0.0.1,10.0.0.2", REDIS_SENTINEL_NAME: "mymaster" };

describe("TLS to Redis", () => {
  it("one node over rediss:// checks against REDIS_TLS_CA and shows the client certificate", () => {
    const { redis } = loadRedisSettings({
      REDIS_URL: "rediss://redis.internal:6380",
      REDIS_TLS_CA: CA,
      REDIS_TLS_CERT: CERT,
      REDIS_TLS_KEY: KEY,
    });
    expect(redis).toEqual({
      mode: "single",
      url: "rediss://redis.internal:6380",
      tls: { ca: Buffer.from("ca bytes"), cert: Buffer.from("cert bytes"), key: Buffer.from("key bytes") },
    });
  });

  it("a Cluster over rediss:// uses the CA for every node", () => {
    const { redis } = loadRedisSettings({ REDIS_URL: "rediss://x", REDIS_CLUSTER_NODES: "n1:7000", REDIS_TLS_CA: CA });
    expect(redis).toMatchObject({ mode: "cluster", tls: { ca: Buffer.from("ca bytes") } });
  });

  it("Sentinels over rediss:// use TLS to the Sentinels and to the master they name", () => {
    const { redis } = loadRedisSettings({ ...SENTINELS, REDIS_URL: "rediss://x", REDIS_TLS_CA: CA });
    const tls = { ca: Buffer.from("ca bytes") };
    expect(redis).toMatchObject({ mode: "sentinel", tls, sentinelTls: tls });
    const system = loadRedisSettings({ ...SENTINELS, REDIS_URL: "rediss://x" }).redis;
    expect(system).toMatchObject({ mode: "sentinel", tls: {}, sentinelTls: {} });
  });

  it("REDIS_TLS_SERVERNAME is the name every certificate is checked for: the node's, the Cluster's, the Sentinels' and their master's", () => {
    const servername = "redis.internal.example";
    const single = loadRedisSettings({ REDIS_URL: "rediss://10.0.0.5:6380", REDIS_TLS_SERVERNAME: servername });
    expect(single.redis).toEqual({ mode: "single", url: "rediss://10.0.0.5:6380", tls: { servername } });
    const cluster = loadRedisSettings({
      REDIS_URL: "rediss://x",
      REDIS_CLUSTER_NODES: "n1",
      REDIS_TLS_SERVERNAME: servername,
    });
    expect(cluster.redis).toMatchObject({ mode: "cluster", tls: { servername } });
    const sentinel = loadRedisSettings({
      ...SENTINELS,
      REDIS_URL: "rediss://x",
      REDIS_TLS_CA: CA,
      REDIS_TLS_SERVERNAME: servername,
    });
    const tls = { servername, ca: Buffer.from("ca bytes") };
    expect(sentinel.redis).toMatchObject({ mode: "sentinel", tls, sentinelTls: tls });
  });

  it.each([
    [{ REDIS_URL: "redis://x", REDIS_TLS_CA: CA }, "REDIS_TLS_CA", "needs a rediss:// REDIS_URL"],
    [{ REDIS_URL: "redis://x", REDIS_TLS_SERVERNAME: "redis.example" }, "REDIS_TLS_SERVERNAME", "needs a rediss://"],
    [{ REDIS_URL: "redis://x", REDIS_TLS_CERT: CERT, REDIS_TLS_KEY: KEY }, "REDIS_TLS_CERT", "needs a rediss://"],
    [{ REDIS_URL: "rediss://x", REDIS_TLS_CERT: CERT }, "REDIS_TLS_KEY", "must be set together with the other"],
    [{ REDIS_URL: "rediss://x", REDIS_TLS_KEY: KEY }, "REDIS_TLS_CERT", "must be set together with the other"],
    [{ REDIS_URL: "rediss://x", REDIS_TLS_CA: "/nonexistent/ca.pem" }, "REDIS_TLS_CA", "cannot be read (ENOENT"],
  ])("%j is refused", (env, variable, problem) => {
    const e = configError({ JWT_SECRET: SECRET, ...env });
    expect(e.variable).toBe(variable);
    expect(e.message).toContain(problem);
  });
});

describe("the Sentinels' credentials", () => {
  it("go to the Sentinels, apart from the master's", () => {
    const { redis } = loadRedisSettings({
      ...SENTINELS,
      REDIS_URL: "redis://app:master-pass@x",
      REDIS_SENTINEL_USERNAME: "sentinel-user",
      REDIS_SENTINEL_PASSWORD: "sentinel-pass",
    });
    expect(redis).toMatchObject({
      username: "app",
      password: "master-pass",
      sentinelUsername: "sentinel-user",
      sentinelPassword: "sentinel-pass",
    });
  });

  it("the password may come from a file (REDIS_SENTINEL_PASSWORD_FILE)", () => {
    const file = tempFile("sentinel-password", "from a file\n");
    const { redis } = loadRedisSettings({ ...SENTINELS, REDIS_SENTINEL_PASSWORD_FILE: file });
    expect(redis).toMatchObject({ sentinelPassword: "from a file" });
  });

  it.each([
    [{ REDIS_URL: "redis://x", REDIS_SENTINEL_PASSWORD: "p" }, "REDIS_SENTINEL_PASSWORD", "needs REDIS_SENTINELS"],
    [{ ...SENTINELS, REDIS_SENTINEL_USERNAME: "u" }, "REDIS_SENTINEL_USERNAME", "needs REDIS_SENTINEL_PASSWORD"],
  ])("%j is refused, naming no password", (env, variable, problem) => {
    const e = configError({ JWT_SECRET: SECRET, ...env });
    expect(e.variable).toBe(variable);
    expect(e.message).toContain(problem);
  });
});
