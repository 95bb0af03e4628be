/**
 * Redis over TLS, as configured from the environment (REDIS_URL rediss://,
 * REDIS_TLS_CA, REDIS_TLS_CERT, REDIS_TLS_KEY), against real redis-servers
 * that serve TLS only (`--port 0 --tls-port`), with a CA and certificates
 * made here with openssl: the CA makes the store work; a server certificate
 * for another name is refused, and Redis counts as unavailable with the TLS
 * reason in the log and no password anywhere; a server that requires client
 * certificates is reached with REDIS_TLS_CERT/REDIS_TLS_KEY, and not without.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { loadRedisSettings } from "../../src/config/index.js";
import { Failure } from "../../src/services/failure.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis/store.js";
import { capturingLogger } from "../harness/capturing-logger.js";
import { type RedisServerHandle, startRedisServer } from "../harness/redis-server.js";
import { uniquePrefix } from "../harness/redis-url.js";

const PASSWORD = "tls-redis-password-4711";
const dir = mkdtempSync(join(tmpdir(), "bl-redis-tls-"));
const file = (name: string) => join(dir, name);
const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });

/** A certificate `name`.pem/-key.pem signed by the CA, with the names of `name`.ext (subjectAltName). */
function issue(name: string, subject: string): void {
  openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", `${name}-key.pem`, "-subj", `/CN=${subject}`);
  openssl("req", "-new", "-key", `${name}-key.pem`, "-subj", `/CN=${subject}`, "-out", `${name}.csr`);
  openssl(
    ..."x509 -req -days 2 -CA ca.pem -CAkey ca-key.pem -CAcreateserial".split(" "),
    ...["-in", `${name}.csr`, "-out", `${name}.pem`, "-extfile", `${name}.ext`],
  );
}

function makeCertificates(): void {
  openssl(
    ..."req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=boardline-test-ca".split(" "),
    "-keyout",
    "ca-key.pem",
    "-out",
    "ca.pem",
  );
  for (const [name, san] of [
    ["server", "IP:127.0.0.1,DNS:localhost"],
    ["wrong", "DNS:redis.elsewhere.example"],
    ["client", "DNS:boardline-client"],
  ] as const) {
    execFileSync("sh", ["-c", `printf 'subjectAltName=${san}\\n' > ${name}.ext`], { cwd: dir });
    issue(name, name);
  }
}

/** A TLS-only redis-server with `cert`'s certificate and a password; `clients`: require client certificates. */
function tlsServer(cert: "server" | "wrong", clients: boolean): Promise<RedisServerHandle> {
  const ca = readFileSync(file("ca.pem"));
  return startRedisServer({
    args: [
      ...["--tls-cert-file", file(`${cert}.pem`), "--tls-key-file", file(`${cert}-key.pem`)],
      ...["--tls-ca-cert-file", file("ca.pem"), "--tls-auth-clients", clients ? "yes" : "no"],
      ...["--requirepass", PASSWORD],
    ],
    tls: {
      ca,
      ...(clients ? { cert: readFileSync(file("client.pem")), key: readFileSync(file("client-key.pem")) } : {}),
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
    const { store } = storeFrom(good.port, { REDIS_TLS_CA: file("ca.pem") });
    stores.push(store);
    await store.waitUntilReady();
    await store.setMute(mute);
    expect(await store.getMuteState(mute.project, mute.channel)).toEqual({ "u-1": true });
  });

  test("a server certificate for another name is refused: unavailable, the reason logged, no password shown", async () => {
    const { store, log } = storeFrom(wrongName.port, { REDIS_TLS_CA: file("ca.pem") });
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
      REDIS_TLS_CA: file("ca.pem"),
      REDIS_TLS_CERT: file("client.pem"),
      REDIS_TLS_KEY: file("client-key.pem"),
    });
    stores.push(store);
    await store.waitUntilReady();
    await store.setMute(mute);
    expect(await store.getMuteState(mute.project, mute.channel)).toEqual({ "u-1": true });
  });

  test("…and without a client certificate it does not", async () => {
    const { store } = storeFrom(mutual.port, { REDIS_TLS_CA: file("ca.pem") });
    stores.push(store);
    const ready = await store.waitUntilReady(1500).catch((e: unknown) => e);
    expect((ready as Failure).kind).toBe("unavailable");
  });
});
