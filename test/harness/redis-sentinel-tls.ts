/**
 * A Sentinel deployment that serves TLS only, from the machine's
 * `redis-server` on free loopback ports (./redis-server.ts): a master, its
 * replicas and one Sentinel, each with `--port 0 --tls-port`, requiring client
 * certificates signed by the test CA (./test-ca.ts) and a password. Between
 * themselves they speak TLS too (`tls-replication yes`: the replicas to the
 * master, the Sentinel to both), each showing its own certificate. The master
 * and its replicas take one certificate, the Sentinel another, so a test can
 * give either one for a wrong name.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { ConnectionOptions as TlsOptions } from "node:tls";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { eventually } from "./eventually.js";
import { HOST, nodeArgs, READY_TIMEOUT_MS } from "./redis-replicated.js";
import { type RedisServerHandle, startRedisServer } from "./redis-server.js";
import type { CertificateFiles, TestCa } from "./test-ca.js";

export interface TlsSentinelOptions {
  readonly ca: TestCa;
  /** The master's and the replicas' certificate. */
  readonly redisCert: CertificateFiles;
  readonly sentinelCert: CertificateFiles;
  /** The certificate the harness's own clients show. */
  readonly clientCert: CertificateFiles;
  /** The master's and the replicas' `requirepass` (and `masterauth`, and the Sentinel's `auth-pass`). */
  readonly password: string;
  /** The Sentinel's own `requirepass`. */
  readonly sentinelPassword: string;
  readonly replicas?: number;
  readonly masterName?: string;
}

export interface TlsSentinelHandle {
  readonly master: RedisServerHandle;
  readonly replicas: readonly RedisServerHandle[];
  readonly sentinel: RedisServerHandle;
  readonly masterName: string;
  /** TLS settings that reach any of its servers without checking their names: the harness's and a test's raw access. */
  readonly clientTls: TlsOptions;
  stop(): Promise<void>;
}

/**
 * Starts the master, the replicas and the Sentinel; resolves once the Sentinel names the master and
 * knows the replicas, and the replicas acknowledge the master's writes.
 */
export async function startTlsSentinel(o: TlsSentinelOptions): Promise<TlsSentinelHandle> {
  const masterName = o.masterName ?? "boardline-tls";
  const replicaCount = o.replicas ?? 0;
  const dir = mkdtempSync(join(tmpdir(), "bl-sentinel-tls-"));
  const clientTls: TlsOptions = {
    ca: readFileSync(o.ca.caFile),
    cert: readFileSync(o.clientCert.cert),
    key: readFileSync(o.clientCert.key),
    // Which name each certificate carries is what the tests try; the harness only needs in.
    checkServerIdentity: () => undefined,
  };
  const started: RedisServerHandle[] = [];
  const stop = async () => {
    // The Sentinel first (it is last in the list), so it reconfigures nothing being stopped.
    for (const server of [...started].reverse()) await server.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  const tlsArgs = (cert: CertificateFiles) => [
    ...["--tls-cert-file", cert.cert, "--tls-key-file", cert.key, "--tls-ca-cert-file", o.ca.caFile],
    ...["--tls-auth-clients", "yes", "--tls-replication", "yes"],
  ];
  const redisNode = async (...more: string[]) => {
    const node = await startRedisServer({
      args: [
        ...nodeArgs(dir, started.length),
        ...tlsArgs(o.redisCert),
        ...["--requirepass", o.password, "--masterauth", o.password],
        ...more,
      ],
      tls: clientTls,
      probeAuth: { username: "default", password: o.password },
    });
    started.push(node);
    return node;
  };
  try {
    const master = await redisNode();
    for (let i = 0; i < replicaCount; i++) await redisNode("--replicaof", HOST, String(master.port));
    const replicas = started.slice(1);
    const config = join(dir, "sentinel.conf");
    writeFileSync(
      config,
      [
        `sentinel monitor ${masterName} ${HOST} ${master.port} 1`,
        `sentinel auth-pass ${masterName} ${o.password}`,
        `requirepass ${o.sentinelPassword}`,
        "",
      ].join("\n"),
    );
    const sentinel = await startRedisServer({
      sentinelConfig: config,
      args: tlsArgs(o.sentinelCert),
      tls: clientTls,
      probeAuth: { username: "default", password: o.sentinelPassword },
    });
    started.push(sentinel);
    await sentinelReady(sentinel.port, masterName, master.port, replicaCount, clientTls, o.sentinelPassword);
    await replicasAcknowledge(master.port, replicaCount, clientTls, o.password);
    return { master, replicas, sentinel, masterName, clientTls, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

async function sentinelReady(
  port: number,
  masterName: string,
  masterPort: number,
  replicas: number,
  tls: TlsOptions,
  password: string,
): Promise<void> {
  const client = new Redis({ host: HOST, port, tls, password, maxRetriesPerRequest: 1 });
  client.on("error", () => {});
  try {
    await eventually(
      async () => {
        const addr = (await client.call("SENTINEL", "GET-MASTER-ADDR-BY-NAME", masterName)) as string[] | null;
        const known = (await client.call("SENTINEL", "REPLICAS", masterName)) as unknown[];
        return addr?.[1] === String(masterPort) && known.length >= replicas;
      },
      READY_TIMEOUT_MS,
      "the Sentinel to name the master over TLS and know its replicas",
    );
  } finally {
    client.disconnect();
  }
}

/**
 * The master's writes reach `replicas` replicas (a linked replica may not acknowledge the first WAIT
 * yet: ./redis-replicated.ts's `acknowledging`, over TLS).
 */
async function replicasAcknowledge(port: number, replicas: number, tls: TlsOptions, password: string): Promise<void> {
  if (replicas === 0) return;
  const client = new Redis({ host: HOST, port, tls, password, maxRetriesPerRequest: 1 });
  client.on("error", () => {});
  try {
    await eventually(
      async () => {
        await client.set("bl-harness:replication-check", String(Date.now()));
        return Number(await client.call("WAIT", String(replicas), "1000")) >= replicas;
      },
      READY_TIMEOUT_MS,
      `${replicas} replicas of ${port} to acknowledge a write over TLS`,
    );
  } finally {
    client.disconnect();
  }
}
