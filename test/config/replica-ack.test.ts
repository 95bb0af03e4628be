/**
 * REDIS_MIN_REPLICAS and REDIS_REPLICA_TIMEOUT_MS: replicas are asked for only
 * with a Redis, and the WAIT must end before the command timeout cuts it off.
 */
import { describe, expect, it } from "vitest";
import { loadConfig, loadRedisSettings } from "../../src/config/index.js";
import { configError, SECRET } from "./helpers.js";

const REDIS = { JWT_SECRET: SECRET, REDIS_URL: "redis://127.0.0.1:6379" };

describe("replicated acknowledgement settings", () => {
  it("default: no replicas required (the primary's acknowledgement), a 500 ms WAIT when they are", () => {
    expect(loadConfig({ JWT_SECRET: SECRET }).redisReplicaAck).toEqual({ minReplicas: 0, timeoutMs: 500 });
    expect(loadConfig(REDIS).redisReplicaAck).toEqual({ minReplicas: 0, timeoutMs: 500 });
  });

  it.each([
    ["REDIS_URL", { REDIS_URL: "redis://127.0.0.1:6379" }],
    ["REDIS_CLUSTER_NODES", { REDIS_CLUSTER_NODES: "127.0.0.1:7000,127.0.0.1:7001" }],
    ["REDIS_SENTINELS", { REDIS_SENTINELS: "127.0.0.1", REDIS_SENTINEL_NAME: "m" }],
  ])("taken with %s, for the server and the CLI alike", (_, redis) => {
    const env = { JWT_SECRET: SECRET, ...redis, REDIS_MIN_REPLICAS: "2", REDIS_REPLICA_TIMEOUT_MS: "250" };
    expect(loadConfig(env).redisReplicaAck).toEqual({ minReplicas: 2, timeoutMs: 250 });
    expect(loadRedisSettings(env).replicaAck).toEqual({ minReplicas: 2, timeoutMs: 250 });
  });

  it("replicas without a Redis stop start-up (the in-memory store has none)", () => {
    const e = configError({ JWT_SECRET: SECRET, REDIS_MIN_REPLICAS: "1" });
    expect(e.variable).toBe("REDIS_MIN_REPLICAS");
    expect(e.message).toBe("REDIS_MIN_REPLICAS needs a Redis (REDIS_URL, REDIS_CLUSTER_NODES or REDIS_SENTINELS)");
  });

  it("the WAIT must end before the command timeout, when replicas are required", () => {
    const e = configError({ ...REDIS, REDIS_MIN_REPLICAS: "1", REDIS_REPLICA_TIMEOUT_MS: "1000" });
    expect(e.variable).toBe("REDIS_REPLICA_TIMEOUT_MS");
    expect(e.message).toBe(
      "REDIS_REPLICA_TIMEOUT_MS must be below REDIS_COMMAND_TIMEOUT_MS (1000) when REDIS_MIN_REPLICAS is set",
    );
    const raised = {
      ...REDIS,
      REDIS_MIN_REPLICAS: "1",
      REDIS_REPLICA_TIMEOUT_MS: "1000",
      REDIS_COMMAND_TIMEOUT_MS: "1500",
    };
    expect(loadConfig(raised).redisReplicaAck).toEqual({ minReplicas: 1, timeoutMs: 1000 });
    // Without replicas the WAIT timeout is unused, so it is not held against the command timeout.
    expect(loadConfig({ ...REDIS, REDIS_REPLICA_TIMEOUT_MS: "5000" }).redisReplicaAck.minReplicas).toBe(0);
  });
});
