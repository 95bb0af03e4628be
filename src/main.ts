/**
 * Wires configuration → adapters → services → server, and handles signals.
 */
import { randomBytes } from "node:crypto";
import { JwtAuthenticator, mintToken } from "./auth/jwt.js";
import { type Config, ConfigError, loadConfig } from "./config.js";
import { NetlessConversionClient } from "./conversion/netless-client.js";
import { type ConversionSimulator, startConversionSimulator } from "./conversion/simulator/index.js";
import { demoBanner, demoSeed, seedDemo } from "./demo.js";
import { createLogger } from "./log.js";
import { startServer } from "./server/index.js";
import { MissLimitGuard } from "./services/passphrase-guard.js";
import type { AdminStore } from "./services/ports.js";
import { MemoryStore } from "./store/memory-store.js";
import { ReadCachedStore } from "./store/read-cache.js";
import { createRedisStore } from "./store/redis-store.js";

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`boardline: invalid configuration: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
  const logger = createLogger(config.logLevel);

  const store: AdminStore =
    config.redis === undefined
      ? new MemoryStore({ keyPrefix: config.redisKeyPrefix })
      : createRedisStore(config.redis, {
          keyPrefix: config.redisKeyPrefix,
          logger,
          commandTimeoutMs: config.redisCommandTimeoutMs,
        });
  if (config.redis === undefined && !config.demo) {
    logger.warn("REDIS_URL is not set: using the in-memory store; nothing survives a restart");
  }

  const secret = config.jwt.key ?? { kind: "secret" as const, secret: new Uint8Array(randomBytes(32)) };
  const authenticator = new JwtAuthenticator({
    key: secret,
    algorithms: config.jwt.algorithms,
    projectClaim: config.jwt.projectClaim,
    ...(config.jwt.issuer === undefined ? {} : { issuer: config.jwt.issuer }),
    ...(config.jwt.audience === undefined ? {} : { audience: config.jwt.audience }),
  });

  const seed = config.demo ? demoSeed() : undefined;
  let simulator: ConversionSimulator | undefined;
  let baseUrl = config.conversionApiBase;
  if (baseUrl === undefined) {
    simulator = await startConversionSimulator({
      credentials: { keys: seed === undefined ? [] : [{ accessKey: seed.accessKey, secretKey: seed.secretKey }] },
      logger,
    });
    baseUrl = simulator.url;
  }
  const backend = new NetlessConversionClient({ baseUrl, timeoutMs: config.conversionTimeoutMs, logger });

  const server = await startServer({
    host: config.host,
    port: config.port,
    ...(config.tls === undefined ? {} : { tls: config.tls }),
    store: config.passphraseCacheMs > 0 ? new ReadCachedStore(store, config.passphraseCacheMs) : store,
    authenticator,
    backend,
    ...(config.guessLimit === undefined ? {} : { guard: new MissLimitGuard(store, config.guessLimit) }),
    logger,
    maxBodyBytes: config.maxBodyBytes,
    corsOrigins: config.corsOrigins,
    collectDefaultMetrics: true,
  });
  logger.info({ url: server.url, demo: config.demo, store: config.redis?.mode ?? "memory" }, "boardline is listening");

  if (seed !== undefined && secret.kind === "secret") {
    await seedDemo(store, seed);
    const token = await mintToken({
      secret: secret.secret,
      project: seed.project,
      subject: "demo-user",
      ttlSeconds: 24 * 3600,
      projectClaim: config.jwt.projectClaim,
    });
    const host = config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host;
    const scheme = config.tls === undefined ? "http" : "https";
    process.stdout.write(
      `${demoBanner(`${scheme}://${host.includes(":") ? `[${host}]` : host}:${server.port}`, token, seed)}\n`,
    );
  }

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      logger.warn({ signal }, "second signal: exiting now");
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal, graceMs: config.shutdownGraceMs }, "shutting down");
    void (async () => {
      await server.shutdown(config.shutdownGraceMs);
      backend.close();
      await simulator?.close();
      await store.close();
      logger.info("bye");
      process.exit(0);
    })().catch((e: unknown) => {
      logger.error({ err: e }, "shutdown failed");
      process.exit(1);
    });
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

main().catch((e: unknown) => {
  process.stderr.write(`boardline: failed to start: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
