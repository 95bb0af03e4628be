/**
 * The process: read the configuration, build the adapters it names, start
 * boardline through the composition root (compose.ts), print the demo's
 * commands when it is the demo, and shut down gracefully on SIGTERM/SIGINT.
 */
import { randomBytes } from "node:crypto";
import { JwtAuthenticator, mintToken } from "./auth/jwt.js";
import { type Server, launch } from "./compose.js";
import { type Config, ConfigError, type JwtKeyConfig, loadConfig, type WebhookConfig } from "./config/index.js";
import { NetlessConversionClient } from "./netless/client.js";
import { type ConversionSimulator, startConversionSimulator } from "./demo/simulator/index.js";
import { type DemoSeed, type DemoTokens, demoBanner, demoSeed, seedDemo } from "./demo/demo.js";
import { type PhoneGateway, startPhoneGateway } from "./demo/phone-gateway/index.js";
import { createLogger, type Logger } from "./log.js";
import { MissLimitGuard } from "./services/passphrase-guard.js";
import { type AdminStore, CHANNELS_ADMIN_SCOPE, PSTN_GATEWAY_SCOPE } from "./services/ports.js";
import { retryLockMs } from "./services/idempotency/safe-retries.js";
import { MemoryStore } from "./store/memory/store.js";
import { ReadCachedStore } from "./store/read-cache.js";
import { createRedisStore } from "./store/redis/store.js";
import type { ExchangeTracer } from "./tracing/hooks.js";
import { startTracing } from "./tracing/start-tracing.js";

async function main(): Promise<void> {
  const config = configOrExit();
  const logger = createLogger(config.logLevel);
  const tracing = await startTracing(config.tracing, logger);
  const store = openStore(config, logger);
  const key = config.jwt.key ?? { kind: "secret" as const, secret: new Uint8Array(randomBytes(32)) };
  const seed = config.demo ? demoSeed() : undefined;
  const conversion = await conversionBackend(config, seed, logger, tracing?.exchanges);
  const server = await launch({
    host: config.host,
    port: config.port,
    ...(config.tls === undefined ? {} : { tls: config.tls }),
    store: config.passphraseCacheMs > 0 ? new ReadCachedStore(store, config.passphraseCacheMs) : store,
    authenticator: authenticator(config, key),
    backend: conversion.backend,
    ...(config.guessLimit === undefined ? {} : { guard: new MissLimitGuard(store, config.guessLimit) }),
    logger,
    maxBodyBytes: config.maxBodyBytes,
    corsOrigins: config.corsOrigins,
    collectDefaultMetrics: true,
    ...(config.metricsPort === undefined ? {} : { metricsPort: config.metricsPort }),
    follow: config.conversionFollow,
    conversionApi: config.conversionApi,
    maxWatches: config.maxWatches,
    maxWatchesPerProject: config.maxWatchesPerProject,
    maxWatchChannels: config.maxWatchChannels,
    presenceLeaseMs: config.line.leaseMs,
    ...(tracing === undefined ? {} : { tracer: tracing.calls }),
    ...(config.conversionWebhook === undefined ? {} : { webhooks: webhookSettings(config.conversionWebhook) }),
    idempotencyLockMs: retryLockMs(config.conversionTimeoutMs, config.redisCommandTimeoutMs),
    ...(config.channelDefaultTtlMs === undefined ? {} : { channelDefaultTtlMs: config.channelDefaultTtlMs }),
  });
  logger.info(
    { url: server.url, metricsPort: server.metricsPort, demo: config.demo, store: config.redis?.mode ?? "memory" },
    "boardline is listening",
  );
  if (!config.demo && config.developmentKeys.length > 0) {
    logger.warn(
      { variables: config.developmentKeys },
      "using the fixed development key for these variables: anyone can derive it, so NODE_ENV=production refuses it",
    );
  }
  let phoneGateway: PhoneGateway | undefined;
  if (seed !== undefined && key.kind === "secret") {
    const demo = await announceDemo(config, server, store, seed, key.secret);
    phoneGateway = demoPhoneGateway(config, logger, seed, demo);
  }
  stopOnSignals(config, logger, server, async () => {
    // First, so its watch is not one of the streams the drain waits for.
    await phoneGateway?.close();
    await server.shutdown(config.shutdownGraceMs);
    conversion.backend.close();
    await conversion.simulator?.close();
    await store.close();
    await tracing?.shutdown(); // the spans still buffered go out
  });
}

function configOrExit(): Config {
  try {
    return loadConfig();
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    process.stderr.write(`boardline: invalid configuration: ${e.message}\n`);
    process.exit(2);
  }
}

function openStore(config: Config, logger: Logger): AdminStore {
  if (config.redis !== undefined) {
    return createRedisStore(config.redis, {
      keyPrefix: config.redisKeyPrefix,
      passphraseKeys: config.passphraseKeys,
      logger,
      commandTimeoutMs: config.redisCommandTimeoutMs,
      retentionSeconds: config.conversionRetentionDays * 86_400,
      replicaAck: config.redisReplicaAck,
      idempotencyTtlSeconds: config.idempotencyTtlHours * 3600,
      secretsKeys: config.secretsKeys,
      line: config.line,
    });
  }
  if (!config.demo) logger.warn("REDIS_URL is not set: using the in-memory store; nothing survives a restart");
  return new MemoryStore({
    keyPrefix: config.redisKeyPrefix,
    passphraseKeys: config.passphraseKeys,
    retentionSeconds: config.conversionRetentionDays * 86_400,
    idempotencyTtlSeconds: config.idempotencyTtlHours * 3600,
    secretsKeys: config.secretsKeys,
    line: config.line,
  });
}

/** The configured webhook key, or (demo mode only) a random one. */
function webhookSettings(webhook: WebhookConfig): { base: string; secret: Uint8Array } {
  return { base: webhook.base, secret: webhook.secret ?? new Uint8Array(randomBytes(32)) };
}

function authenticator(config: Config, key: JwtKeyConfig): JwtAuthenticator {
  return new JwtAuthenticator({
    key,
    algorithms: config.jwt.algorithms,
    projectClaim: config.jwt.projectClaim,
    scopeClaim: config.jwt.scopeClaim,
    cacheMaxMs: config.jwt.cacheMaxMs,
    ...(config.jwt.issuer === undefined ? {} : { issuer: config.jwt.issuer }),
    ...(config.jwt.audience === undefined ? {} : { audience: config.jwt.audience }),
    ...(config.jwt.types === undefined ? {} : { types: config.jwt.types }),
  });
}

/** The Netless client, against CONVERSION_API_BASE or (demo) the bundled simulator. */
async function conversionBackend(
  config: Config,
  seed: DemoSeed | undefined,
  logger: Logger,
  tracer: ExchangeTracer | undefined,
): Promise<{ backend: NetlessConversionClient; simulator: ConversionSimulator | undefined }> {
  let simulator: ConversionSimulator | undefined;
  let baseUrl = config.conversionApiBase;
  if (baseUrl === undefined) {
    simulator = await startConversionSimulator({
      credentials: { keys: seed === undefined ? [] : [{ accessKey: seed.accessKey, secretKey: seed.secretKey }] },
      // A demo conversion takes about 3 s: Waiting, then 3 pages, then Finished.
      progressMs: 750,
      // Its pages are real images at its own /files, so a page (examples/browser) shows them.
      serveFiles: true,
      // The real backend's default limit, so the demo meets its "too many tasks" answer as production would.
      createsPerSecond: 1,
      logger,
    });
    baseUrl = simulator.url;
  }
  return {
    backend: new NetlessConversionClient({
      baseUrl,
      timeoutMs: config.conversionTimeoutMs,
      api: config.conversionApi,
      logger,
      tracer,
    }),
    simulator,
  };
}

/** Seeds the demo project and prints a ready-to-paste command per route; answers the URL and the tokens. */
async function announceDemo(
  config: Config,
  server: Server,
  store: AdminStore,
  seed: DemoSeed,
  secret: Uint8Array,
): Promise<{ url: string; tokens: DemoTokens }> {
  await seedDemo(store, seed);
  const token = await mintToken({
    secret,
    project: seed.project,
    subject: "demo-user",
    ttlSeconds: 24 * 3600,
    projectClaim: config.jwt.projectClaim,
  });
  const scoped = (subject: string, scope: string) =>
    mintToken({
      secret,
      project: seed.project,
      subject,
      ttlSeconds: 24 * 3600,
      projectClaim: config.jwt.projectClaim,
      scopeClaim: config.jwt.scopeClaim,
      scopes: [scope],
    });
  const tokens = {
    user: token,
    gateway: await scoped("demo-gateway", PSTN_GATEWAY_SCOPE),
    admin: await scoped("demo-backend", CHANNELS_ADMIN_SCOPE),
  };
  const host = config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host;
  const scheme = config.tls === undefined ? "http" : "https";
  const url = `${scheme}://${host.includes(":") ? `[${host}]` : host}:${server.port}`;
  process.stdout.write(`${demoBanner(url, seed, tokens, config.demoPhoneGatewayMs > 0)}\n`);
  return { url, tokens };
}

/** The demo's telephone-gateway simulator on the seeded channel, unless DEMO_PHONE_GATEWAY_MS is 0. */
function demoPhoneGateway(
  config: Config,
  logger: Logger,
  seed: DemoSeed,
  demo: { url: string; tokens: DemoTokens },
): PhoneGateway | undefined {
  if (config.demoPhoneGatewayMs === 0) return undefined;
  return startPhoneGateway({
    url: demo.url,
    token: demo.tokens.gateway,
    channel: seed.channel,
    periodMs: config.demoPhoneGatewayMs,
    // Well within the presence lease, as a real gateway syncs.
    presenceMs: Math.max(1000, Math.floor(config.line.leaseMs / 3)),
    ...(config.tls === undefined ? {} : { tls: { ca: config.tls.cert } }),
    logger,
  });
}

/** The first SIGTERM/SIGINT shuts down gracefully and exits 0; a second one exits at once. */
/**
 * SIGTERM (an orchestrator, a deploy): first `unready` — `/readyz` 503 while
 * everything is still served — for SHUTDOWN_DELAY_MS, so load balancers stop
 * routing here before the port stops accepting; then the shutdown (drain within
 * SHUTDOWN_GRACE_MS). SIGINT (a person at a terminal) skips the delay. A second
 * signal exits at once.
 */
function stopOnSignals(
  config: Config,
  logger: Logger,
  server: { unready(): void },
  shutdown: () => Promise<void>,
): void {
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) {
      logger.warn({ signal }, "second signal: exiting now");
      process.exit(1);
    }
    stopping = true;
    const delayMs = signal === "SIGTERM" ? config.shutdownDelayMs : 0;
    if (delayMs > 0) {
      server.unready();
      logger.info({ signal, delayMs }, "not ready: serving on until load balancers have noticed");
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
    logger.info({ signal, graceMs: config.shutdownGraceMs }, "shutting down");
    await shutdown();
  };
  const run = (signal: string) =>
    stop(signal).then(
      () => {
        logger.info("bye");
        process.exit(0);
      },
      (e: unknown) => {
        logger.error({ err: e }, "shutdown failed");
        process.exit(1);
      },
    );
  process.on("SIGTERM", () => run("SIGTERM"));
  process.on("SIGINT", () => run("SIGINT"));
}

main().catch((e: unknown) => {
  process.stderr.write(`boardline: failed to start: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
