import { describe, expect, it } from "vitest";
import { loadConfig, loadRedisSettings, loadTokenSettings } from "../../src/config/index.js";
import { VARIABLES } from "../../src/config/variables.js";
import { developmentKeyRing } from "../../src/secrets/key-ring.js";
import { SECRET } from "./helpers.js";

describe("defaults", () => {
  it("with only a JWT secret: in-memory store, the real conversion API, every documented default", () => {
    expect(loadConfig({ JWT_SECRET: SECRET })).toEqual({
      production: false,
      demo: false,
      host: "0.0.0.0",
      port: 8080,
      metricsPort: 9090,
      redis: undefined,
      redisKeyPrefix: "bl:",
      redisCommandTimeoutMs: 1000,
      redisReplicaAck: { minReplicas: 0, timeoutMs: 500 },
      jwt: {
        key: { kind: "secret", secret: new TextEncoder().encode(SECRET) },
        algorithms: ["HS256"],
        issuer: undefined,
        audience: undefined,
        types: undefined,
        projectClaim: "project_id",
        scopeClaim: "scope",
        cacheMaxMs: 60_000,
      },
      conversionApiBase: "https://api.netless.link",
      conversionApi: "projector",
      conversionTimeoutMs: 10_000,
      conversionFollow: { firstPollMs: 1_500, maxPollMs: 5_000, followMs: 600_000, maxInFlight: 256, queueMax: 1_000 },
      conversionRetentionDays: 7,
      idempotencyTtlHours: 24,
      conversionWebhook: undefined,
      maxWatches: 10_000,
      maxWatchesPerProject: 2_500,
      maxWatchChannels: 1000,
      line: { leaseMs: 60_000, maxLine: 5000 },
      // The telephone-gateway simulator runs only in the demo.
      demoPhoneGatewayMs: 0,
      corsOrigins: [],
      maxBodyBytes: 65_536,
      tls: undefined,
      logLevel: "info",
      shutdownDelayMs: 5_000,
      shutdownGraceMs: 10_000,
      guessLimit: { attempts: 10, windowSeconds: 60, provenSeconds: 600 },
      passphraseCacheMs: 1000,
      passphraseKeys: developmentKeyRing("PASSPHRASE_KEYS"),
      secretsKeys: developmentKeyRing("SECRETS_KEYS"),
      developmentKeys: ["PASSPHRASE_KEYS", "SECRETS_KEYS"],
      tracing: undefined,
    });
  });

  it("OTEL_EXPORTER_OTLP_ENDPOINT turns tracing on; OTEL_SERVICE_NAME names the service (boardline by default)", () => {
    expect(
      loadConfig({ JWT_SECRET: SECRET, OTEL_SERVICE_NAME: "ignored while tracing is off" }).tracing,
    ).toBeUndefined();
    expect(loadConfig({ JWT_SECRET: SECRET, OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" }).tracing).toEqual({
      endpoint: "http://collector:4318",
      serviceName: "boardline",
    });
    const named = {
      JWT_SECRET: SECRET,
      OTEL_EXPORTER_OTLP_ENDPOINT: "https://otel.example",
      OTEL_SERVICE_NAME: "bl-eu",
    };
    expect(loadConfig(named).tracing).toEqual({ endpoint: "https://otel.example", serviceName: "bl-eu" });
    expect(loadConfig({ JWT_SECRET: SECRET, OTEL_EXPORTER_OTLP_ENDPOINT: " " }).tracing).toBeUndefined();
  });

  it("CONVERSION_API picks the API new conversion tasks are created on (projector unless legacy)", () => {
    expect(loadConfig({ JWT_SECRET: SECRET, CONVERSION_API: "legacy" }).conversionApi).toBe("legacy");
    expect(loadConfig({ JWT_SECRET: SECRET, CONVERSION_API: "projector" }).conversionApi).toBe("projector");
    expect(loadConfig({ JWT_SECRET: SECRET, CONVERSION_API: " " }).conversionApi).toBe("projector");
    expect(loadConfig({}).conversionApi).toBe("projector");
  });

  it("/metrics on METRICS_PORT (9090 unset) outside the demo; on PORT in the demo or with METRICS_ON_PUBLIC_PORT=true", () => {
    expect(loadConfig({ JWT_SECRET: SECRET, METRICS_PORT: "9100" }).metricsPort).toBe(9100);
    expect(loadConfig({ JWT_SECRET: SECRET, METRICS_PORT: "0" }).metricsPort).toBe(0);
    expect(loadConfig({ JWT_SECRET: SECRET }).metricsPort).toBe(9090);
    expect(loadConfig({ JWT_SECRET: SECRET, METRICS_ON_PUBLIC_PORT: "true" }).metricsPort).toBeUndefined();
    expect(loadConfig({ JWT_SECRET: SECRET, METRICS_ON_PUBLIC_PORT: "false" }).metricsPort).toBe(9090);
    expect(loadConfig({}).metricsPort).toBeUndefined();
    expect(loadConfig({ METRICS_PORT: "9100" }).metricsPort).toBe(9100);
  });

  it("with nothing set: the demo, on 127.0.0.1, with the bundled simulator and a random secret", () => {
    const config = loadConfig({});
    expect(config).toMatchObject({ demo: true, production: false, host: "127.0.0.1", redis: undefined });
    expect(config.conversionApiBase).toBeUndefined();
    expect(config.jwt.key).toBeUndefined();
    expect(config.jwt.algorithms).toEqual(["HS256"]);
  });

  it("in the demo, HOST and CONVERSION_API_BASE still apply when set", () => {
    const config = loadConfig({ HOST: "0.0.0.0", CONVERSION_API_BASE: "http://127.0.0.1:9" });
    expect(config).toMatchObject({ demo: true, host: "0.0.0.0", conversionApiBase: "http://127.0.0.1:9" });
  });

  it("a blank value counts as not set; values are trimmed (but JWT_SECRET is taken as given)", () => {
    const spaced = `  ${"x".repeat(30)}`;
    const config = loadConfig({
      PORT: "  ",
      LOG_LEVEL: "",
      JWT_SECRET: spaced,
      HOST: " ::1 ",
      MAX_BODY_BYTES: " 300 ",
    });
    expect(config).toMatchObject({ port: 8080, logLevel: "info", host: "::1", maxBodyBytes: 300 });
    expect(config.jwt.key).toEqual({ kind: "secret", secret: new TextEncoder().encode(spaced) });
    expect(loadConfig({ JWT_SECRET: "" }).demo).toBe(true);
  });

  it("every integer's default is its row's default", () => {
    const config = loadConfig({ JWT_SECRET: SECRET });
    const read = {
      PORT: config.port,
      REDIS_COMMAND_TIMEOUT_MS: config.redisCommandTimeoutMs,
      REDIS_MIN_REPLICAS: config.redisReplicaAck.minReplicas,
      REDIS_REPLICA_TIMEOUT_MS: config.redisReplicaAck.timeoutMs,
      CONVERSION_TIMEOUT_MS: config.conversionTimeoutMs,
      MAX_BODY_BYTES: config.maxBodyBytes,
      SHUTDOWN_DELAY_MS: config.shutdownDelayMs,
      SHUTDOWN_GRACE_MS: config.shutdownGraceMs,
      GUESS_LIMIT: config.guessLimit?.attempts,
      GUESS_WINDOW_SECONDS: config.guessLimit?.windowSeconds,
      GUESS_PROVEN_SECONDS: config.guessLimit?.provenSeconds,
      PASSPHRASE_CACHE_MS: config.passphraseCacheMs,
      JWT_CACHE_MAX_MS: config.jwt.cacheMaxMs,
      IDEMPOTENCY_TTL_HOURS: config.idempotencyTtlHours,
    };
    for (const [name, value] of Object.entries(read)) {
      const row = VARIABLES[name as keyof typeof read];
      expect({ name, value }).toEqual({ name, value: row.default });
    }
  });

  it("JWT_CACHE_MAX_MS is taken from 0 (no caching) to an hour", () => {
    expect(loadConfig({ JWT_SECRET: SECRET, JWT_CACHE_MAX_MS: "0" }).jwt.cacheMaxMs).toBe(0);
    expect(loadConfig({ JWT_SECRET: SECRET, JWT_CACHE_MAX_MS: "3600000" }).jwt.cacheMaxMs).toBe(3_600_000);
  });

  it("IDEMPOTENCY_TTL_HOURS is taken from 1 to 720 hours", () => {
    expect(loadConfig({ JWT_SECRET: SECRET, IDEMPOTENCY_TTL_HOURS: "1" }).idempotencyTtlHours).toBe(1);
    expect(loadConfig({ JWT_SECRET: SECRET, IDEMPOTENCY_TTL_HOURS: "720" }).idempotencyTtlHours).toBe(720);
  });

  it("values within range are taken, at both ends", () => {
    const low = loadConfig({ JWT_SECRET: SECRET, PORT: "0", MAX_BODY_BYTES: "256", GUESS_WINDOW_SECONDS: "1" });
    expect(low).toMatchObject({ port: 0, maxBodyBytes: 256, guessLimit: { attempts: 10, windowSeconds: 1 } });
    const high = loadConfig({ JWT_SECRET: SECRET, PORT: "65535", MAX_BODY_BYTES: String(16 * 1024 * 1024) });
    expect(high).toMatchObject({ port: 65535, maxBodyBytes: 16 * 1024 * 1024 });
  });

  it("lists: CORS origins lose a trailing slash, * stays; JWT claims are taken as set", () => {
    const config = loadConfig({
      JWT_SECRET: SECRET,
      CORS_ORIGINS: "https://app.example.com/, http://localhost:3000,*",
      JWT_ISSUER: "iss",
      JWT_AUDIENCE: "aud",
      JWT_PROJECT_CLAIM: "tenant",
      JWT_SCOPE_CLAIM: "scp",
      LOG_LEVEL: "silent",
    });
    expect(config.corsOrigins).toEqual(["https://app.example.com", "http://localhost:3000", "*"]);
    expect(config.jwt).toMatchObject({ issuer: "iss", audience: "aud", projectClaim: "tenant", scopeClaim: "scp" });
    expect(config.logLevel).toBe("silent");
  });

  it("the CLI's parts: Redis settings and token settings", () => {
    const replicaAck = { minReplicas: 0, timeoutMs: 500 };
    expect(loadRedisSettings({})).toEqual({ redis: undefined, keyPrefix: "bl:", commandTimeoutMs: 1000, replicaAck });
    expect(loadRedisSettings({ REDIS_URL: "redis://h:1/2", REDIS_KEY_PREFIX: "x:" })).toEqual({
      redis: { mode: "single", url: "redis://h:1/2" },
      keyPrefix: "x:",
      commandTimeoutMs: 1000,
      replicaAck,
    });
    expect(loadTokenSettings({})).toEqual({
      secret: undefined,
      issuer: undefined,
      audience: undefined,
      types: undefined,
      projectClaim: "project_id",
      scopeClaim: "scope",
    });
    // token mint signs with JWT_SECRET only; a JWKS source beside it is not its concern.
    const tokens = loadTokenSettings({ JWT_SECRET: SECRET, JWT_JWKS_URL: "https://idp.example/jwks" });
    expect(tokens.secret).toEqual(new TextEncoder().encode(SECRET));
  });
});

describe("SHUTDOWN_DELAY_MS in demo mode", () => {
  it("is 0 when not set (no load balancer to wait for), and what it is set to otherwise", () => {
    expect(loadConfig({}).shutdownDelayMs).toBe(0);
    expect(loadConfig({ SHUTDOWN_DELAY_MS: "1500" }).shutdownDelayMs).toBe(1_500);
  });
});
