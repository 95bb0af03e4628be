/**
 * Starts a real boardline server on loopback port 0 for a test file: Redis
 * store (shared test Redis, a key prefix of the file's own) or the in-memory
 * store, the conversion simulator, an HS256 secret, and a seeded world of two
 * projects. Everything it starts, `close()` stops. `startTwin` adds a second
 * instance of the same service (same store, secret and backend simulator).
 */
import { randomBytes } from "node:crypto";
import { JwtAuthenticator, mintToken } from "../../src/auth/jwt.js";
import { NetlessConversionClient } from "../../src/netless/client.js";
import { type ConversionSimulator, startConversionSimulator } from "../../src/demo/simulator/index.js";
import { type Logger, silentLogger } from "../../src/log.js";
import { type Server, launch } from "../../src/compose.js";
import type { PassphraseGuard } from "../../src/services/passphrase-guard.js";
import {
  type AdminStore,
  type Authenticator,
  type ConversionApi,
  DEFAULT_LINE_LIMITS,
  PSTN_GATEWAY_SCOPE,
} from "../../src/services/ports.js";
import { MemoryStore } from "../../src/store/memory/store.js";
import { createRedisStore, type RedisConnectionOptions, type RedisStore } from "../../src/store/redis/store.js";
import { freePort } from "./redis-server.js";
import { deleteKeysWithPrefix, redisUrl, uniquePrefix } from "./redis-url.js";
import type { ListenOptions } from "../../src/server/http/listener.js";
import type { FollowerSettings } from "../../src/services/conversion/follower.js";
import type { PstnWatchSettings } from "../../src/services/pstn/watch-hub.js";
import { retryLockMs } from "../../src/services/idempotency/safe-retries.js";
import type { ReplicaAck } from "../../src/store/redis/replica-ack.js";

export interface World {
  /** Project A: whiteboard set up (access/secret key signing), one channel. */
  readonly project: string;
  readonly channel: string;
  readonly hostPassphrase: string;
  readonly attendeePassphrase: string;
  /** Project B: whiteboard set up with a plain SDK token, one channel. */
  readonly otherProject: string;
  readonly otherChannel: string;
  readonly otherHostPassphrase: string;
  /** Project C: no whiteboard record at all. */
  readonly bareProject: string;
  readonly bareHostPassphrase: string;
  readonly accessKey: string;
  readonly secretKey: string;
  readonly sdkToken: string;
}

export interface Boardline {
  readonly url: string;
  readonly port: number;
  readonly server: Server;
  readonly store: AdminStore;
  /** The Redis key prefix ("memory" store: the prefix it was given). */
  readonly prefix: string;
  /** The Redis URL of the store ("" for the "memory" store). */
  readonly redisUrl: string;
  readonly simulator: ConversionSimulator;
  readonly backend: NetlessConversionClient;
  readonly secret: Uint8Array;
  readonly world: World;
  /** A valid token for `world.project` (or the given project/subject), for 600 s unless told. */
  token(project?: string, subject?: string, ttlSeconds?: number): Promise<string>;
  /** A valid token of the telephone gateway (scope `pstn.gateway`) for `world.project` (or the given one). */
  gatewayToken(project?: string): Promise<string>;
  close(): Promise<void>;
}

export interface BoardlineOptions {
  readonly store?: "redis" | "memory";
  /** Redis URL for the "redis" store (default: the shared test Redis). */
  readonly redisUrl?: string;
  readonly maxBodyBytes?: number;
  readonly corsOrigins?: readonly string[];
  readonly tls?: { cert: string | Buffer; key: string | Buffer };
  readonly conversionTimeoutMs?: number;
  /**
   * The API the backend client creates tasks on. Default `legacy`: the suites
   * that look at what reached the simulator were written against it.
   */
  readonly conversionApi?: ConversionApi;
  /** How the conversion follower polls (default: quick, for tests: first poll after 100 ms, every 200 ms at most). */
  readonly follow?: Partial<FollowerSettings>;
  readonly maxWatches?: number;
  /** A project's share of them (default: a quarter of `maxWatches`, as in production). */
  readonly maxWatchesPerProject?: number;
  readonly maxWatchChannels?: number;
  /** How the mute-event watches read (src/services/pstn/watch-hub.ts). */
  readonly pstnWatch?: Partial<PstnWatchSettings>;
  /** The Redis deployment of the "redis" store (default: the single node at `redisUrl`). */
  readonly connection?: RedisConnectionOptions;
  readonly guard?: (store: AdminStore) => PassphraseGuard;
  readonly logger?: Logger;
  readonly headersTimeoutMs?: number;
  /** The other transport deadlines (src/server/http/listener.ts), when a test needs them short. */
  readonly deadlines?: Pick<ListenOptions, "requestTimeoutMs" | "responseTimeoutMs" | "idleTimeoutMs">;
  /** Serve /metrics on a port of its own (0 = any free port). */
  readonly metricsPort?: number;
  /** Export prom-client's process and Node.js series too, as `node dist/src/main.js` does (default false). */
  readonly collectDefaultMetrics?: boolean;
  /** Replaces the HS256 authenticator (e.g. a JWKS one for attack tests). */
  readonly authenticator?: Authenticator;
  /** Key prefix (default: a fresh `uniquePrefix`); e.g. to read records the CLI wrote. */
  readonly prefix?: string;
  /** The HS256 secret (default: 32 random bytes). */
  readonly secret?: Uint8Array;
  /**
   * Write the seeded world into the store (default true). `world` is returned
   * either way, and the simulator accepts its credentials either way.
   */
  readonly seed?: boolean;
  /**
   * Conversion webhooks signed with `secret`, with the instance's own loopback
   * URL as CONVERSION_WEBHOOK_BASE (so it listens on a port picked beforehand).
   */
  readonly webhooks?: { readonly secret: Uint8Array };
  /** How long an Idempotency-Key's answer is kept (the store's setting; default 24 hours). */
  readonly idempotencyTtlSeconds?: number;
  /** The phone line's presence lease (the store's setting, and the sweep's; default DEFAULT_LINE_LIMITS'). */
  readonly presenceLeaseMs?: number;
  /** How long a call holds its Idempotency-Key (default: `retryLockMs` of the backend's and Redis's deadlines). */
  readonly idempotencyLockMs?: number;
  /** REDIS_MIN_REPLICAS and its WAIT's timeout, for the "redis" store (default none). */
  readonly replicaAck?: ReplicaAck;
}

/** The options that set up one instance (a server and its backend client), for `startTwin`. */
export type InstanceOptions = Omit<
  BoardlineOptions,
  "store" | "redisUrl" | "prefix" | "secret" | "seed" | "idempotencyTtlSeconds" | "presenceLeaseMs" | "replicaAck"
>;

/**
 * The conversion plan of the seeded world's projects, which the simulator holds them to: high enough
 * that a suite's conversions are not slowed by the queue's pace (test/faults/conversion-queue-instances
 * drives the backend's default plan of one a second).
 */
export const WORLD_CONVERSION_QPS = 20;

export async function startBoardline(o: BoardlineOptions = {}): Promise<Boardline> {
  const logger = o.logger ?? silentLogger();
  const prefix = o.prefix ?? uniquePrefix("bl-test");
  const url = o.redisUrl ?? (o.store === "memory" ? "" : redisUrl());
  const store = await openStore(
    o.store === "memory" ? undefined : (o.connection ?? url),
    prefix,
    logger,
    o.idempotencyTtlSeconds,
    o.presenceLeaseMs,
    o.replicaAck,
  );
  const world = newWorld();
  if (o.seed !== false) await seedWorld(store, world);
  const simulator = await startConversionSimulator({
    credentials: { sdkTokens: [world.sdkToken], keys: [{ accessKey: world.accessKey, secretKey: world.secretKey }] },
    progressMs: 50,
    createsPerSecond: WORLD_CONVERSION_QPS,
  });
  const secret = o.secret ?? new Uint8Array(randomBytes(32));
  const shared: Shared = { store, prefix, redisUrl: url, simulator, secret, world };
  const instance = await startInstance(shared, o, logger, o.presenceLeaseMs);
  return {
    ...shared,
    ...instance,
    token: (project = world.project, subject = "tester", ttlSeconds = 600) =>
      mintToken({ secret, project, subject, ttlSeconds }),
    gatewayToken: (project = world.project) =>
      mintToken({ secret, project, subject: "gateway", ttlSeconds: 600, scopes: [PSTN_GATEWAY_SCOPE] }),
    async close() {
      await instance.close();
      await simulator.close();
      await store.close();
      if (o.store !== "memory" && o.connection === undefined) await deleteKeysWithPrefix(url, prefix);
    },
  };
}

/**
 * A second instance of `of`'s service, as another replica behind a load
 * balancer: the same store (so the same Redis and prefix), secret, world and
 * conversion simulator, with a server and a backend client of its own, set up
 * by `o` as `startBoardline` would. Its `close()` stops only those two.
 */
export async function startTwin(of: Boardline, o: InstanceOptions = {}): Promise<Boardline> {
  const instance = await startInstance(of, o, o.logger ?? silentLogger());
  return { ...of, ...instance };
}

/** What the instances of one service share. */
type Shared = Pick<Boardline, "store" | "prefix" | "redisUrl" | "simulator" | "secret" | "world">;
type Instance = Pick<Boardline, "url" | "port" | "server" | "backend" | "close">;

async function startInstance(
  shared: Shared,
  o: InstanceOptions,
  logger: Logger,
  presenceLeaseMs?: number,
): Promise<Instance> {
  // The webhook base names the port, so it is picked before the server listens on it.
  const port = o.webhooks === undefined ? 0 : await freePort();
  const timeoutMs = o.conversionTimeoutMs ?? 2000;
  const backend = new NetlessConversionClient({
    baseUrl: shared.simulator.url,
    timeoutMs,
    api: o.conversionApi ?? "legacy",
    logger,
  });
  const server = await launch({
    host: "127.0.0.1",
    port,
    conversionApi: o.conversionApi ?? "legacy",
    ...(o.webhooks === undefined ? {} : { webhooks: { base: `http://127.0.0.1:${port}`, secret: o.webhooks.secret } }),
    ...(o.tls === undefined ? {} : { tls: o.tls }),
    ...(o.headersTimeoutMs === undefined ? {} : { headersTimeoutMs: o.headersTimeoutMs }),
    ...o.deadlines,
    ...(o.metricsPort === undefined ? {} : { metricsPort: o.metricsPort }),
    ...(o.collectDefaultMetrics === undefined ? {} : { collectDefaultMetrics: o.collectDefaultMetrics }),
    follow: { firstPollMs: 100, maxPollMs: 200, tickMs: 50, ...o.follow },
    ...(o.maxWatches === undefined ? {} : { maxWatches: o.maxWatches }),
    ...(o.maxWatchesPerProject === undefined ? {} : { maxWatchesPerProject: o.maxWatchesPerProject }),
    ...(o.maxWatchChannels === undefined ? {} : { maxWatchChannels: o.maxWatchChannels }),
    ...(o.pstnWatch === undefined ? {} : { pstnWatch: o.pstnWatch }),
    ...(presenceLeaseMs === undefined ? {} : { presenceLeaseMs }),
    idempotencyLockMs: o.idempotencyLockMs ?? retryLockMs(timeoutMs, 1000),
    store: shared.store,
    authenticator:
      o.authenticator ??
      new JwtAuthenticator({
        key: { kind: "secret", secret: shared.secret },
        algorithms: ["HS256"],
        projectClaim: "project_id",
      }),
    backend,
    ...(o.guard === undefined ? {} : { guard: o.guard(shared.store) }),
    logger,
    maxBodyBytes: o.maxBodyBytes ?? 64 * 1024,
    corsOrigins: o.corsOrigins ?? [],
  });
  return {
    url: server.url,
    port: server.port,
    server,
    backend,
    async close() {
      await server.shutdown(1000);
      backend.close();
    },
  };
}

/** The Redis store at `url` or of `connection` (the in-memory store when there is none). */
async function openStore(
  at: string | RedisConnectionOptions | undefined,
  prefix: string,
  logger: Logger,
  idempotencyTtlSeconds: number | undefined,
  presenceLeaseMs: number | undefined,
  replicaAck?: ReplicaAck,
): Promise<AdminStore> {
  const ttl = {
    ...(idempotencyTtlSeconds === undefined ? {} : { idempotencyTtlSeconds }),
    ...(presenceLeaseMs === undefined ? {} : { line: { ...DEFAULT_LINE_LIMITS, leaseMs: presenceLeaseMs } }),
  };
  if (at === undefined) return new MemoryStore({ keyPrefix: prefix, ...ttl });
  const connection: RedisConnectionOptions = typeof at === "string" ? { mode: "single", url: at } : at;
  const redis: RedisStore = createRedisStore(connection, {
    keyPrefix: prefix,
    logger,
    ...ttl,
    ...(replicaAck === undefined ? {} : { replicaAck }),
  });
  await redis.waitUntilReady();
  return redis;
}

function newWorld(): World {
  const word = () => randomBytes(6).toString("hex");
  return {
    project: `proj-a-${word()}`,
    channel: `chan-a-${word()}`,
    hostPassphrase: `host a ${word()}`,
    attendeePassphrase: `guest a ${word()}`,
    otherProject: `proj-b-${word()}`,
    otherChannel: `chan-b-${word()}`,
    otherHostPassphrase: `host b ${word()}`,
    bareProject: `proj-c-${word()}`,
    bareHostPassphrase: `host c ${word()}`,
    accessKey: `ak-${word()}`,
    secretKey: randomBytes(24).toString("base64url"),
    sdkToken: `NETLESSSDK_test-${word()}`,
  };
}

async function seedWorld(store: AdminStore, world: World): Promise<void> {
  await store.createChannel({
    project: world.project,
    channel: world.channel,
    hostPassphrase: world.hostPassphrase,
    attendeePassphrase: world.attendeePassphrase,
  });
  await store.createChannel({
    project: world.otherProject,
    channel: world.otherChannel,
    hostPassphrase: world.otherHostPassphrase,
  });
  await store.createChannel({ project: world.bareProject, channel: "bare", hostPassphrase: world.bareHostPassphrase });
  await store.setWhiteboard(world.project, {
    region: "us-sv",
    credentials: { accessKey: world.accessKey, secretKey: world.secretKey },
    conversionQps: WORLD_CONVERSION_QPS,
  });
  await store.setWhiteboard(world.otherProject, {
    region: "sg",
    credentials: { sdkToken: world.sdkToken },
    conversionQps: WORLD_CONVERSION_QPS,
  });
}
