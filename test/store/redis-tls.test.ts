/**
 * Redis over TLS, as configured from the environment (REDIS_URL rediss://,
 * REDIS_TLS_CA, REDIS_TLS_CERT, REDIS_TLS_KEY), against real redis-servers
 * that serve TLS only (`--port 0 --tls-port`), with a CA and certificates
 * made here with openssl: the CA makes the store work; a server certificate
 * for another name is refused, and Redis counts as unavailable with the TLS
 * reason in the log and no password anywhere; a server that requires client
 * certificates is reached with REDIS_TLS_CERT/REDIS_TLS_KEY, and not without.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { loadRedisSettings } from "../../src/config/index.js";
import { Failure } from "../../src/services/failure.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis/store.js";
import { capturingLogger } from "../harness/capturing-logger.js";
import { type RedisServerHandle, startRedisServer } from "../harness/redis-server.js";
import { uniquePrefix } from "../harness/redis-url.js";
import { type CertificateFiles, makeTestCa, type TestCa } from "../harness/test-ca.js";

const PASSWORD = "tls-redis-password-4711";
let ca: TestCa;
let certs: Record<"server" | "wrong" | "client", CertificateFiles>;

function makeCertificates(): void {
  ca = makeTestCa();
  certs = {
    server: ca.issue("server", "IP:127.0.0.1,DNS:localhost"),
    wrong: ca.issue("wrong", "DNS:redis.elsewhere.example"),
    client: ca.issue("client", "DNS:boardline-client"),
  };
}

/** A TLS-only redis-server with `cert`'s certificate and a password; `clients`: require client certificates. */
function tlsServer(cert: "server" | "wrong", clients: boolean): Promise<RedisServerHandle> {
  return startRedisServer({
    args: [
      ...["--tls-cert-file", certs[cert].cert, "--tls-key-file", certs[cert].key],
      ...["--tls-ca-cert-file", ca.caFile, "--tls-auth-clients", clients ? "yes" : "no"],
      ...["--requirepass", PASSWORD],
    ],
    tls: {
      ca: readFileSync(ca.caFile),
      ...(clients ? { cert: readFileSync(certs.client.cert), key: readFileSync(certs.client.key) } : {}),
      // The harness's own start-up probe only: the store under test checks the name.
      checkServerIdentity: () => undefined,
    },
    probeAuth: { username: "default", password: PASSWORD },
  });
}

/** The store as boardline's configuration makes it from `env` (REDIS_URL with the password). */
function storeFrom(port: number, env: Record<string, string>) {
  const { redis } = loadRedisSettings({ REDIS_URL: `rediss://:${PASSWORD}@127.0.0.1:${port}`, ...env });
  if (redis === undefined) throw new Error("no Redis configured");
  const log = capturingLogger();
  const store = createRedisStore(redis, { keyPrefix: uniquePrefix(), logger: log.logger, connectTimeoutMs: 500 });
  return { store, log };
}

const servers: RedisServerHandle[] = [];
const stores: RedisStore[] = [];
let good: RedisServerHandle;
let wrongName: RedisServerHandle;
let mutual: RedisServerHandle;
beforeAll(async () => {
  makeCertificates();
  [good, wrongName, mutual] = await Promise.all([
    tlsServer("server", false),
    tlsServer("wrong", false),
    tlsServer("server", true),
  ]);
  servers.push(good, wrongName, mutual);
}, 60_000);
afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
  await Promise.all(servers.map((s) => s.stop()));
});

const mute = { project: "p-tls", channel: "c-tls", uid: "u-1", mute: true, by: "tester", at: 1 };

describe("TLS to one Redis", () => {
  test("with REDIS_TLS_CA, the store is ready and a mute is stored and read back", async () => {
    const { store } = storeFrom(good.port, { REDIS_TLS_CA: ca.caFile });
    stores.push(store);
    await store.waitUntilReady();
    await store.setMute(mute);
    expect(await store.getMuteState(mute.project, mute.channel)).toEqual({ "u-1": true });
  });

  test("a server certificate for another name is refused: unavailable, the reason logged, no password shown", async () => {
    const { store, log } = storeFrom(wrongName.port, { REDIS_TLS_CA: ca.caFile });
    stores.push(store);
    const ready = await store.waitUntilReady(1500).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(ready).toBeInstanceOf(Failure);
    expect((ready as Failure).kind).toBe("unavailable");
    const call = await store.getMuteState(mute.project, mute.channel).catch((e: unknown) => e);
    expect((call as Failure).kind).toBe("unavailable");
    const said = `${log.text()} ${String(ready)} ${String((ready as Error).cause)} ${String(call)}`;
    expect(said).toMatch(/altnames|certificate/i);
    expect(said).not.toContain(PASSWORD);
  });

  test("mutual TLS: with REDIS_TLS_CERT and REDIS_TLS_KEY the server that requires a client certificate serves", async () => {
    const { store } = storeFrom(mutual.port, {
      REDIS_TLS_CA: ca.caFile,
      REDIS_TLS_CERT: certs.client.cert,
      REDIS_TLS_KEY: certs.client.key,
    });
    stores.push(store);
    await store.waitUntilReady();
    await store.setMute(mute);
    expect(await store.getMuteState(mute.project, mute.channel)).toEqual({ "u-1": true });
  });

  test("…and without a client certificate it does not", async () => {
    const { store } = storeFrom(mutual.port, { REDIS_TLS_CA: ca.caFile });
    stores.push(store);
    const ready = await store.waitUntilReady(1500).catch((e: unknown) => e);
    expect((ready as Failure).kind).toBe("unavailable");
  });
});
