/**
 * Redis through Sentinel over TLS, configured from the environment as an
 * operator would (REDIS_SENTINELS, REDIS_SENTINEL_NAME, a rediss:// REDIS_URL
 * with the master's password, REDIS_SENTINEL_PASSWORD, REDIS_TLS_CA,
 * REDIS_TLS_CERT, REDIS_TLS_KEY, REDIS_TLS_SERVERNAME), against a master, a
 * replica and a Sentinel that serve TLS only, require client certificates
 * and passwords, and replicate and watch over TLS too
 * (../harness/redis-sentinel-tls.ts). The whole store contract runs through
 * it, a live boardline answers a mute, a watch and an admin call, and a write
 * waits for the replica. A master's or a Sentinel's certificate for another
 * name is refused: Redis counts as unavailable, the log says which and why,
 * and neither password shows. The Sentinel announces the master by IP
 * address: certificates that carry only a DNS name serve once
 * REDIS_TLS_SERVERNAME names it.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { loadRedisSettings } from "../../src/config/index.js";
import { Failure } from "../../src/services/failure.js";
import { createRedisStore, type RedisConnectionOptions, type RedisStore } from "../../src/store/redis/store.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { liveDeploymentTests } from "../harness/live-deployment.js";
import { capturingLogger } from "../harness/capturing-logger.js";
import { startTlsSentinel, type TlsSentinelHandle } from "../harness/redis-sentinel-tls.js";
import { uniquePrefix } from "../harness/redis-url.js";
import { type CertificateFiles, makeTestCa, type TestCa } from "../harness/test-ca.js";
import { redisSubject, storeContract } from "./contract.js";

const PASSWORD = "sentinel-tls-master-password-5113";
const SENTINEL_PASSWORD = "sentinel-tls-own-password-7741";
/** The one name the `shared` certificates carry, and no address does. */
const SHARED_NAME = "redis.internal.example";

let made: { ca: TestCa; certs: Record<"server" | "shared" | "client", CertificateFiles> } | undefined;
/** The test CA and its certificates, made on first use. */
function pki() {
  if (made === undefined) {
    const ca = makeTestCa();
    const certs = {
      server: ca.issue("server", "IP:127.0.0.1,DNS:localhost"),
      shared: ca.issue("shared", `DNS:${SHARED_NAME}`),
      client: ca.issue("client", "DNS:boardline-client"),
    };
    made = { ca, certs };
  }
  return made;
}
/** The deployments, started at most once each, on first use. */
const started = new Map<string, Promise<TlsSentinelHandle>>();

/** A deployment whose master and replicas show `redis`'s certificate and whose Sentinel shows `sentinel`'s. */
function deployment(redis: "server" | "shared", sentinel: "server" | "shared", replicas = 0) {
  const name = `${redis}-${sentinel}-${replicas}`;
  let handle = started.get(name);
  if (handle === undefined) {
    const { ca, certs } = pki();
    handle = startTlsSentinel({
      ca,
      redisCert: certs[redis],
      sentinelCert: certs[sentinel],
      clientCert: certs.client,
      password: PASSWORD,
      sentinelPassword: SENTINEL_PASSWORD,
      replicas,
    });
    started.set(name, handle);
  }
  return handle;
}

afterAll(async () => {
  await Promise.all([...started.values()].map(async (h) => (await h).stop()));
});

/** What an operator sets for `d`, with `more` (another Sentinel port, REDIS_TLS_SERVERNAME…). */
function envFor(d: TlsSentinelHandle, more: Record<string, string> = {}): Record<string, string> {
  return {
    REDIS_URL: `rediss://:${PASSWORD}@sentinel-managed`,
    REDIS_SENTINELS: `127.0.0.1:${d.sentinel.port}`,
    REDIS_SENTINEL_NAME: d.masterName,
    REDIS_SENTINEL_PASSWORD: SENTINEL_PASSWORD,
    REDIS_TLS_CA: pki().ca.caFile,
    REDIS_TLS_CERT: pki().certs.client.cert,
    REDIS_TLS_KEY: pki().certs.client.key,
    ...more,
  };
}

/** The connection boardline's configuration makes of `env`. */
function connectionOf(env: Record<string, string>): RedisConnectionOptions {
  const { redis } = loadRedisSettings(env);
  if (redis?.mode !== "sentinel") throw new Error("not a Sentinel configuration");
  return redis;
}

const good = () => deployment("server", "server", 1);

storeContract("RedisStore through Sentinel, TLS to the Sentinel and the master, both with passwords", {
  approximateTrim: true,
  hasClock: false,
  async factory() {
    const d = await good();
    const env = envFor(d);
    return redisSubject({
      connection: connectionOf(env),
      unreachable: (port) => connectionOf({ ...env, REDIS_SENTINELS: `127.0.0.1:${port}` }),
      client: new Redis({ host: "127.0.0.1", port: d.master.port, tls: d.clientTls, password: PASSWORD }),
    });
  },
});

describe("a live boardline through Sentinel over TLS", () => {
  let bl: Boardline;
  beforeAll(async () => {
    bl = await startBoardline({ connection: connectionOf(envFor(await good())) });
  });
  afterAll(async () => {
    await bl?.close();
  });

  liveDeploymentTests(() => bl, "tls");
});

const stores: RedisStore[] = [];
afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
});

/** The store boardline's configuration makes of `env` (as main.ts does, REDIS_MIN_REPLICAS included), and its log. */
function storeFrom(env: Record<string, string>) {
  const { redis, replicaAck } = loadRedisSettings(env);
  if (redis === undefined) throw new Error("no Redis configured");
  const log = capturingLogger();
  const store = createRedisStore(redis, {
    keyPrefix: uniquePrefix(),
    logger: log.logger,
    connectTimeoutMs: 500,
    replicaAck,
  });
  stores.push(store);
  return { store, log };
}

const mute = { project: "p-stls", channel: "c-stls", uid: "u-1", mute: true, by: "tester", at: 1 };

/** Waits in vain; everything the store said about it, for the test to read. */
async function refused(store: RedisStore, log: { text(): string }): Promise<string> {
  const ready = await store.waitUntilReady(1500).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(ready).toBeInstanceOf(Failure);
  expect((ready as Failure).kind).toBe("unavailable");
  const call = await store.getMuteState(mute.project, mute.channel).catch((e: unknown) => e);
  expect((call as Failure).kind).toBe("unavailable");
  const cause = (ready as Error).cause as Error | undefined;
  return `${log.text()} ${String(ready)} ${String(cause)} ${String(cause?.cause)} ${String(call)}`;
}

describe("certificates, through Sentinel", () => {
  test("with REDIS_MIN_REPLICAS=1, a mute is acknowledged once the replica has it: replication runs over TLS", async () => {
    const { store } = storeFrom(envFor(await good(), { REDIS_MIN_REPLICAS: "1" }));
    await store.waitUntilReady();
    await store.setMute(mute);
    expect(await store.getMuteState(mute.project, mute.channel)).toEqual({ "u-1": true });
  });

  test("a master certificate for another name is refused: unavailable, the reason logged, no password shown", async () => {
    const { store, log } = storeFrom(envFor(await deployment("shared", "server")));
    const said = await refused(store, log);
    expect(said).toContain(
      "Hostname/IP does not match certificate's altnames: IP: 127.0.0.1 is not in the cert's list",
    );
    expect(said).not.toContain(PASSWORD);
    expect(said).not.toContain(SENTINEL_PASSWORD);
  });

  test("a Sentinel certificate for another name is refused, and the log says so (ioredis alone says only 'Connection is closed')", async () => {
    const { store, log } = storeFrom(envFor(await deployment("server", "shared")));
    const said = await refused(store, log);
    expect(said).toContain("All sentinels are unreachable");
    expect(log.text()).toContain(
      "a Sentinel's certificate was refused: Hostname/IP does not match certificate's altnames",
    );
    expect(said).not.toContain(PASSWORD);
    expect(said).not.toContain(SENTINEL_PASSWORD);
  });

  test("certificates for one DNS name the addresses lack: refused without REDIS_TLS_SERVERNAME, served with it", async () => {
    const d = await deployment("shared", "shared");
    const without = storeFrom(envFor(d));
    expect(await refused(without.store, without.log)).toContain("a Sentinel's certificate was refused");
    const { store } = storeFrom(envFor(d, { REDIS_TLS_SERVERNAME: SHARED_NAME }));
    await store.waitUntilReady();
    await store.setMute(mute);
    expect(await store.getMuteState(mute.project, mute.channel)).toEqual({ "u-1": true });
  });
});
