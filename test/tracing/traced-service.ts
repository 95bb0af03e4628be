/**
 * The real process (`node dist/src/main.js`) with tracing on, exporting to a
 * receiver the test started (OTLP over HTTP/JSON on loopback), against the
 * Redis it is given and the bundled conversion simulator, with a seeded world:
 * project A signs its Netless tokens from an access/secret key pair, project B
 * has a plain SDK token. Every module the process loads from
 * `@opentelemetry/*` is recorded (test/harness/record-modules.mjs).
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { mintToken } from "../../src/auth/jwt.js";
import { type ConversionSimulator, startConversionSimulator } from "../../src/demo/simulator/index.js";
import { silentLogger } from "../../src/log.js";
import { createRedisStore, type RedisConnectionOptions, type RedisStore } from "../../src/store/redis/store.js";
import { eventually } from "../harness/eventually.js";
import { type MainProcess, startMainProcess } from "../harness/main-process.js";
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from "../harness/otlp-receiver.js";
import { uniquePrefix } from "../harness/redis-url.js";

const RECORDER = fileURLToPath(new URL("../harness/record-modules.mjs", import.meta.url));

export interface TracedWorld {
  readonly projectA: string;
  readonly projectB: string;
  readonly hostA: string;
  readonly guestA: string;
  readonly hostB: string;
  readonly accessKey: string;
  readonly secretKey: string;
  readonly sdkToken: string;
  /** JWT_SECRET */
  readonly jwtSecret: string;
}

export interface ProcessUnderTest {
  readonly main: MainProcess;
  /** The `@opentelemetry` modules the process loaded so far (file URLs). */
  otelModules(): string[];
  stop(): void;
}

/** Starts the process with `env` over the common settings; `record`: where to record loaded modules. */
export async function startProcess(env: Record<string, string>): Promise<ProcessUnderTest> {
  const dir = mkdtempSync(join(tmpdir(), "bl-modules-"));
  const file = join(dir, "modules.txt");
  const main = await startMainProcess({
    NODE_ENV: "production",
    LOG_LEVEL: "info", // the harness reads the URL from the "listening" line
    NODE_OPTIONS: `--import=${RECORDER}`,
    RECORD_MODULES_FILE: file,
    ...env,
  });
  await eventually(async () => (await fetch(`${main.url}/readyz`)).status === 200, 10_000, "/readyz to answer 200");
  return {
    main,
    otelModules() {
      try {
        return readFileSync(file, "utf8").split("\n").filter(Boolean);
      } catch {
        return []; // nothing recorded: the file was never written
      }
    },
    stop() {
      main.proc.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface TracedService {
  readonly world: TracedWorld;
  readonly store: RedisStore;
  readonly prefix: string;
  readonly simulator: ConversionSimulator;
  readonly receiver: OtlpReceiver;
  readonly process: ProcessUnderTest;
  readonly url: string;
  /** A token of `project` (default A), remembered for the secret scan. */
  token(project?: string): Promise<string>;
  /** Every token minted so far. */
  readonly tokens: string[];
  close(): Promise<void>;
}

/** `redisEnv`: the variables that point the process at `connection`. */
export async function startTracedService(
  connection: RedisConnectionOptions,
  redisEnv: Record<string, string>,
): Promise<TracedService> {
  const world = newWorld();
  const prefix = uniquePrefix("traces");
  const store = createRedisStore(connection, { keyPrefix: prefix, logger: silentLogger() });
  await store.waitUntilReady();
  await seed(store, world);
  const simulator = await startConversionSimulator({
    credentials: { sdkTokens: [world.sdkToken], keys: [{ accessKey: world.accessKey, secretKey: world.secretKey }] },
    progressMs: 50,
  });
  const receiver = await startOtlpReceiver();
  const process = await startProcess({
    ...redisEnv,
    REDIS_KEY_PREFIX: prefix,
    JWT_SECRET: world.jwtSecret,
    CONVERSION_API_BASE: simulator.url,
    CONVERSION_POLL_FIRST_MS: "100",
    CONVERSION_POLL_MAX_MS: "200",
    PASSPHRASE_CACHE_MS: "0",
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_BSP_SCHEDULE_DELAY: "50",
  });
  const tokens: string[] = [];
  return {
    world,
    store,
    prefix,
    simulator,
    receiver,
    process,
    url: process.main.url,
    tokens,
    async token(project = world.projectA) {
      const secret = new TextEncoder().encode(world.jwtSecret);
      const token = await mintToken({ secret, project, subject: "tracer", ttlSeconds: 600 });
      tokens.push(token);
      return token;
    },
    async close() {
      process.stop();
      await receiver.close();
      await simulator.close();
      await store.close();
    },
  };
}

/** A W3C `traceparent` of a new trace, sampled, as a caller's tracer would send it. */
export function newTraceparent(): { header: string; traceId: string; parentId: string } {
  const traceId = randomBytes(16).toString("hex");
  const parentId = randomBytes(8).toString("hex");
  return { header: `00-${traceId}-${parentId}-01`, traceId, parentId };
}

/** The spans of one trace, once `ready` holds for them (spans arrive in batches). */
export async function traceOf(
  receiver: OtlpReceiver,
  traceId: string,
  ready: (spans: readonly ReceivedSpan[]) => boolean,
): Promise<ReceivedSpan[]> {
  const spans = () => receiver.spans().filter((s) => s.traceId === traceId);
  await eventually(() => ready(spans()), 10_000, `the spans of trace ${traceId}`);
  return spans();
}

/** The secrets of the world, and what a careless tracer could derive from them (the passphrases' key hashes). */
export function secretsOf(world: TracedWorld): string[] {
  const passphrases = [world.hostA, world.guestA, world.hostB];
  return [
    ...passphrases,
    ...passphrases.map((p) => createHash("sha256").update(p).digest("hex")),
    world.accessKey,
    world.secretKey,
    world.sdkToken,
    world.jwtSecret,
  ];
}

function newWorld(): TracedWorld {
  const word = () => randomBytes(6).toString("hex");
  return {
    projectA: `proj-a-${word()}`,
    projectB: `proj-b-${word()}`,
    hostA: `host a ${word()}`,
    guestA: `guest a ${word()}`,
    hostB: `host b ${word()}`,
    accessKey: `ak-${word()}`,
    secretKey: randomBytes(24).toString("base64url"),
    sdkToken: `NETLESSSDK_trace-${word()}`,
    jwtSecret: randomBytes(32).toString("hex"),
  };
}

async function seed(store: RedisStore, w: TracedWorld): Promise<void> {
  await store.createChannel({
    project: w.projectA,
    channel: "a",
    hostPassphrase: w.hostA,
    attendeePassphrase: w.guestA,
  });
  await store.createChannel({ project: w.projectB, channel: "b", hostPassphrase: w.hostB });
  await store.setWhiteboard(w.projectA, {
    region: "us-sv",
    credentials: { accessKey: w.accessKey, secretKey: w.secretKey },
  });
  await store.setWhiteboard(w.projectB, { region: "sg", credentials: { sdkToken: w.sdkToken } });
}
