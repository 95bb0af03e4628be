/**
 * The CLI's Redis session: opens the store from the server's variables
 * (REDIS_URL, or REDIS_CLUSTER_NODES / REDIS_SENTINELS + REDIS_SENTINEL_NAME,
 * REDIS_KEY_PREFIX, REDIS_MIN_REPLICAS, and SECRETS_KEYS, which seal the whiteboard records' secrets as
 * the server seals them), waits until it is connected, runs one command's work and
 * always closes it. There is no in-memory mode. Redis trouble becomes a
 * CliFailure naming where Redis is (never its credentials) and why.
 */
import { loadKeyRings, loadRedisSettings, type RedisConfig } from "../config/index.js";
import { silentLogger } from "../log.js";
import { isFailure } from "../services/failure.js";
import { createRedisStore, type RedisStore } from "../store/redis/store.js";
import { CliFailure, causeMessage, configOrFail } from "./cli-failure.js";

const CONNECT_TIMEOUT_MS = 3000;

type Env = Readonly<Record<string, string | undefined>>;

/** Opens the store from the environment, runs `work`, and always closes it. */
export async function withStore<T>(work: (store: RedisStore) => Promise<T>, env: Env = process.env): Promise<T> {
  const settings = configOrFail(() => loadRedisSettings(env));
  const { passphraseKeys, secretsKeys } = configOrFail(() => loadKeyRings(env));
  if (settings.redis === undefined) {
    throw new CliFailure(
      "no Redis configured: set REDIS_URL (or REDIS_CLUSTER_NODES, or REDIS_SENTINELS with REDIS_SENTINEL_NAME); the CLI has no in-memory mode",
    );
  }
  const where = describeRedis(settings.redis);
  const store = createRedisStore(settings.redis, {
    keyPrefix: settings.keyPrefix,
    passphraseKeys,
    logger: silentLogger(),
    commandTimeoutMs: settings.commandTimeoutMs,
    replicaAck: settings.replicaAck,
    secretsKeys,
  });
  try {
    await waitForRedis(store, where);
    return await work(store);
  } catch (e) {
    if (isFailure(e) && e.kind === "unavailable") {
      throw new CliFailure(`Redis at ${where} failed: ${causeMessage(e) ?? "unavailable"}`);
    }
    throw e;
  } finally {
    await store.close();
  }
}

/** Waits for the connection; the readiness failure's cause is the last connection error (e.g. ECONNREFUSED). */
async function waitForRedis(store: RedisStore, where: string): Promise<void> {
  try {
    await store.waitUntilReady(CONNECT_TIMEOUT_MS);
  } catch (e) {
    const why = causeMessage(e);
    throw new CliFailure(`cannot reach Redis at ${where}${why === undefined ? "" : `: ${why}`}`);
  }
}

/** Where Redis is, without credentials. */
export function describeRedis(redis: RedisConfig): string {
  const nodes = (list: readonly { host: string; port: number }[]) =>
    list.map(({ host, port }) => `${host.includes(":") ? `[${host}]` : host}:${port}`).join(",");
  switch (redis.mode) {
    case "single": {
      const u = new URL(redis.url);
      return `${u.protocol}//${u.host}${u.pathname.length > 1 ? u.pathname : ""}`;
    }
    case "cluster":
      return `cluster ${nodes(redis.nodes)}`;
    case "sentinel":
      return `sentinel master ${redis.masterName} via ${nodes(redis.sentinels)}`;
  }
}
