/**
 * Starts a throw-away `redis-server` (the machine's binary) on a free loopback
 * port for tests. No persistence (`--save "" --appendonly no`), so a killed or
 * restarted server comes back empty — exactly what fault tests want. With
 * `{ durable: true }` it keeps an append-only file fsynced on every write in a
 * directory of its own, so what it acknowledged survives a SIGKILL and a restart.
 */
import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { createConnection, createServer, type Socket } from "node:net";
import { type ConnectionOptions as TlsOptions, connect as connectTls } from "node:tls";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sleep } from "./sleep.js";
import { spawnTied } from "./tied-spawn.js";

export interface RedisServerHandle {
  /** `redis://127.0.0.1:<port>` (`rediss://` with `tls`) */
  readonly url: string;
  readonly port: number;
  /** Shuts the server down (SIGTERM) and waits for the process to exit. Idempotent. */
  stop(): Promise<void>;
  /** Sends a signal (default SIGKILL) without waiting: a crash, as seen by clients. */
  kill(signal?: NodeJS.Signals): void;
  /** Starts the server again on the same port (after kill/stop; stops a running one first). */
  restart(): Promise<void>;
}

const HOST = "127.0.0.1";
const START_TIMEOUT_MS = 10_000;
const BINARY = process.env.REDIS_SERVER_BIN ?? "redis-server";

/** Every child we spawned, so a crashing test process does not leave servers behind. */
const running = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

export interface RedisServerOptions {
  /** Append-only file with `appendfsync always`: acknowledged writes survive a kill. */
  readonly durable?: boolean;
  /** More arguments, after the harness's own (e.g. cluster mode; see ./redis-topologies.ts). */
  readonly args?: readonly string[];
  /** Runs a Sentinel (`redis-server <file> --sentinel`) with this configuration file, which it rewrites. */
  readonly sentinelConfig?: string;
  /**
   * Serve TLS only (`--port 0 --tls-port <port>`); the server's own TLS
   * settings (`--tls-cert-file`…) go in `args`, and the harness's start-up
   * probe connects with these client settings (a CA, a client certificate).
   */
  readonly tls?: TlsOptions;
  /** The user the start-up probe logs in as, when the default user is off or has a password. */
  readonly probeAuth?: { readonly username: string; readonly password: string };
}

/** How the harness reaches a server it started: plain or TLS, as whom. */
interface Probe {
  readonly tls: TlsOptions | undefined;
  readonly auth: { readonly username: string; readonly password: string } | undefined;
}

export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServerHandle> {
  const persistence = options.durable
    ? ["--appendonly", "yes", "--appendfsync", "always", "--dir", mkdtempSync(join(tmpdir(), "bl-redis-"))]
    : ["--appendonly", "no", "--dir", tmpdir()];
  const args = [...persistence, ...(options.args ?? [])];
  const head = options.sentinelConfig === undefined ? [] : [options.sentinelConfig, "--sentinel"];
  const probe: Probe = { tls: options.tls, auth: options.probeAuth };
  // Another process may grab the port between our probe and redis binding it;
  // redis then exits with "Address already in use" and we try another port.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      const child = await launch(port, head, args, probe);
      return handle(port, child, head, args, probe);
    } catch (e) {
      if (!(e instanceof AddressInUse) || attempt >= 5) throw e;
    }
  }
}

function handle(
  port: number,
  first: ChildProcess,
  head: readonly string[],
  args: readonly string[],
  probe: Probe,
): RedisServerHandle {
  let child: ChildProcess | undefined = first;

  async function stop(): Promise<void> {
    const current = child;
    child = undefined;
    if (current) await terminate(current, "SIGTERM");
  }

  return {
    url: `${probe.tls === undefined ? "redis" : "rediss"}://${HOST}:${port}`,
    port,
    stop,
    kill(signal: NodeJS.Signals = "SIGKILL") {
      child?.kill(signal);
    },
    async restart() {
      await stop();
      // The old socket may linger briefly after a kill; redis sets SO_REUSEADDR,
      // but give it a few tries before giving up on the port.
      for (let attempt = 1; ; attempt++) {
        try {
          child = await launch(port, head, args, probe);
          return;
        } catch (e) {
          if (!(e instanceof AddressInUse) || attempt >= 20) throw e;
          await sleep(100);
        }
      }
    },
  };
}

class AddressInUse extends Error {}

/** Spawns redis-server on `port` and resolves once it answers PING. */
async function launch(
  port: number,
  head: readonly string[],
  args: readonly string[],
  probe: Probe,
): Promise<ChildProcess> {
  const ports = probe.tls === undefined ? ["--port", String(port)] : ["--port", "0", "--tls-port", String(port)];
  const child = spawnTied(
    BINARY,
    [...head, ...ports, "--bind", HOST, "--save", "", "--daemonize", "no", "--loglevel", "warning", ...args],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  running.add(child);
  let output = "";
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString("utf8")).slice(-4000);
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  const exited = new Promise<never>((_, reject) => {
    child.once("exit", (code, signal) => {
      running.delete(child);
      const why = `redis-server on port ${port} exited early (code ${code}, signal ${signal}): ${output.trim()}`;
      reject(/already in use/i.test(output) ? new AddressInUse(why) : new Error(why));
    });
    child.once("error", (e) => reject(new Error(`cannot run ${BINARY}: ${e.message}`, { cause: e })));
  });
  exited.catch(() => {}); // only observed while starting

  try {
    await Promise.race([waitForPing(port, child.pid, probe), exited]);
  } catch (e) {
    await terminate(child, "SIGKILL");
    throw e;
  }
  return child;
}

async function waitForPing(port: number, pid: number | undefined, probe: Probe): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (await answersPing(port, pid, probe)) return;
    if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer PING`);
    await sleep(20);
  }
}

/**
 * One raw RESP round trip, so the harness needs no client library: PING
 * answered (not LOADING), by our own process — when two test files start
 * servers at once, a probed port may be taken by the other one's server,
 * which would answer PING while ours exits with "address in use".
 */
function answersPing(port: number, pid: number | undefined, probe: Probe): Promise<boolean> {
  return new Promise((resolve) => {
    const socket: Socket =
      probe.tls === undefined ? createConnection({ host: HOST, port }) : connectTls({ ...probe.tls, host: HOST, port });
    const auth = probe.auth === undefined ? "" : `AUTH ${probe.auth.username} ${probe.auth.password}\r\n`;
    // The AUTH's +OK comes first; the rest is read as without it.
    let skip = auth === "" ? "" : "+OK\r\n";
    let reply = "";
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once("error", () => done(false));
    socket.once(probe.tls === undefined ? "connect" : "secureConnect", () =>
      socket.write(`${auth}PING\r\nINFO server\r\n`),
    );
    socket.on("data", (chunk) => {
      reply += chunk.toString("utf8");
      if (skip !== "" && reply.length >= skip.length) {
        if (!reply.startsWith(skip)) return done(false);
        reply = reply.slice(skip.length);
        skip = "";
      }
      if (skip !== "") return;
      if (reply.includes("\r\n") && !reply.startsWith("+PONG")) return done(false);
      const id = /process_id:(\d+)\r\n/.exec(reply);
      if (id !== null) done(pid === undefined || Number(id[1]) === pid);
    });
  });
}

async function terminate(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill(signal);
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}

/** A port the OS considers free right now (listen on 0, read it, close). */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, HOST);
  await once(server, "listening");
  const address = server.address();
  server.close();
  await once(server, "close");
  if (address === null || typeof address === "string") throw new Error("no TCP address");
  return address.port;
}
