/**
 * Debian's `haproxy` in front of boardline instances, as a load balancer in
 * production would be: one frontend on a free loopback port for HTTP/1.1 and
 * cleartext HTTP/2 (h2c, prior knowledge) alike, one backend of the instances
 * with `/readyz` health checks. The configuration is written into a temporary
 * directory and haproxy runs in the foreground (`-db`) as our child; its
 * runtime API (a unix socket in the same directory) says what it thinks of
 * each server (`show stat`).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./redis-server.js";
import { sleep } from "./sleep.js";

export interface HaproxyOptions {
  /** The instances' loopback ports: servers `i0`, `i1`, … in this order. */
  readonly ports: readonly number[];
  /** Health-check interval (ms) and how many failed / passed checks take a server out / in. */
  readonly interMs: number;
  readonly fall: number;
  readonly rise: number;
}

export interface HaproxyHandle {
  /** `http://127.0.0.1:<port>`: the frontend, HTTP/1.1 or h2c. */
  readonly url: string;
  readonly port: number;
  /** Everything haproxy printed (its warnings and alerts). */
  output(): string;
  /** The backend's rows of `show stat`: one per server (`i0`…) and one for the backend (`BACKEND`). */
  stats(): Promise<ServerStat[]>;
  /** Resolves once haproxy says `UP` (or `DOWN`) for server `i<index>`, polling every 25 ms. */
  waitFor(index: number, status: "UP" | "DOWN", timeoutMs: number): Promise<void>;
  stop(): Promise<void>;
}

export interface ServerStat {
  readonly name: string;
  /** `UP`, `DOWN`, `UP 1/2` (going down), `DOWN 1/2` (coming up), `MAINT`, … */
  readonly status: string;
  /** Requests retried on a connection error (`wretr`) and sent to another server (`wredis`). */
  readonly retries: number;
  readonly redispatches: number;
  /** Connection errors to the server (`econ`) and failed responses (`eresp`). */
  readonly connectionErrors: number;
  readonly responseErrors: number;
  /** HTTP responses 5xx that the server (or haproxy for it) gave (`hrsp_5xx`). */
  readonly responses5xx: number;
  /** Sessions (requests, for HTTP/2: streams) sent to it in all (`stot`). */
  readonly total: number;
}

const running = new Set<ChildProcess>();
process.once("exit", () => {
  for (const p of running) p.kill("SIGKILL");
});

/** The configuration; see the comments in it for each choice. */
export function haproxyConfig(o: HaproxyOptions, port: number, socket: string): string {
  const servers = o.ports.map((p, i) => `  server i${i} 127.0.0.1:${p}`);
  return `global
  stats socket ${socket} mode 600 level admin
  maxconn 4096

defaults
  mode http
  timeout connect 2s
  # Long enough for the watch streams, which go quiet between events (SSE sends a comment every 15 s).
  timeout client 5m
  timeout server 5m
  timeout http-request 10s
  timeout http-keep-alive 30s
  timeout check 1s
  # A connection refused or reset before the request was sent (no instance saw it) is tried again,
  # on another server (docs/deploy.md, "What the load balancer must do").
  retries 3
  option redispatch 1
  # Without it an HTTP/1.1 client waits ~200 ms for every answer with a body: boardline's HTTP/2 answers
  # (Node's compatibility layer, which waits for trailers) end with an empty DATA frame carrying
  # END_STREAM, and haproxy (2.6 here; haproxy/haproxy#3447) then holds the HTTP/1.1 answer back with
  # MSG_MORE until the kernel's 200 ms cork timer runs out. HTTP/2 clients are not affected.
  option http-no-delay

frontend boardline
  # No "proto": on a cleartext HTTP frontend haproxy takes HTTP/1.1, and switches a connection to
  # HTTP/2 when it starts with the HTTP/2 preface (gRPC clients' h2c with prior knowledge).
  bind 127.0.0.1:${port}
  default_backend instances

backend instances
  # One backend, HTTP/2 to every instance, for everything: gRPC needs HTTP/2, and boardline serves its
  # JSON routes and server-sent events over HTTP/2 as well, so the HTTP/1.1 requests of JSON clients are
  # sent on as HTTP/2 streams too. Each request (each stream of a client's connection) is balanced on
  # its own, which is what gRPC needs ("balance per request, not per connection"), and the instances
  # see a few multiplexed connections of haproxy's rather than one per client.
  balance roundrobin
  # The checks go over HTTP/2 as well (the server's "proto"). An HTTP/2 request needs an authority: the
  # short form "option httpchk GET /readyz" sends an HTTP/1.0 request without Host, which haproxy 2.6
  # cannot send over HTTP/2 (every check fails with "Socket error"), hence "http-check send" with a Host.
  option httpchk
  http-check send meth GET uri /readyz ver HTTP/1.1 hdr host boardline
  http-check expect status 200
  # inter x fall (+ one inter) must fit in the instances' SHUTDOWN_DELAY_MS: the time a draining
  # instance answers everything while /readyz says 503. No "on-marked-down shutdown-sessions": the
  # streams open on a server marked down go on until boardline itself ends them.
  default-server proto h2 check inter ${o.interMs} fastinter ${o.interMs} downinter ${o.interMs} fall ${o.fall} rise ${o.rise}
${servers.join("\n")}
`;
}

export async function startHaproxy(o: HaproxyOptions): Promise<HaproxyHandle> {
  const dir = mkdtempSync(join(tmpdir(), "bl-haproxy-"));
  const socket = join(dir, "admin.sock");
  const port = await freePort();
  const file = join(dir, "haproxy.cfg");
  writeFileSync(file, haproxyConfig(o, port, socket));
  const proc = spawn("haproxy", ["-db", "-f", file], { stdio: ["ignore", "pipe", "pipe"] });
  running.add(proc);
  proc.once("exit", () => running.delete(proc));
  let out = "";
  proc.stdout?.on("data", (d) => {
    out += String(d);
  });
  proc.stderr?.on("data", (d) => {
    out += String(d);
  });
  const stats = async () => parseStats(await command(socket, "show stat"));
  const handle: HaproxyHandle = {
    url: `http://127.0.0.1:${port}`,
    port,
    output: () => out,
    stats,
    async waitFor(index, status, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const row = (await stats()).find((s) => s.name === `i${index}`);
        if (row?.status === status) return;
        if (Date.now() > deadline) throw new Error(`haproxy did not see i${index} ${status} in ${timeoutMs} ms`);
        await sleep(25);
      }
    },
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        const exited = once(proc, "exit");
        proc.kill("SIGTERM");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  // Up once its runtime API answers and every server has passed its checks.
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`haproxy exited: ${out}`);
    const rows = await stats().catch(() => []);
    if (rows.length > 0 && rows.filter((r) => r.name !== "BACKEND").every((r) => r.status === "UP")) return handle;
    if (Date.now() > deadline) {
      await handle.stop();
      throw new Error(`haproxy did not start with every server UP: ${out}`);
    }
    await sleep(50);
  }
}

/** One command on the runtime API: it answers and closes. */
function command(socket: string, line: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const conn = net.connect(socket);
    let text = "";
    conn.on("data", (d) => {
      text += String(d);
    });
    conn.once("error", reject);
    conn.once("end", () => resolve(text));
    conn.end(`${line}\n`);
  });
}

/** `show stat` is CSV with a `# pxname,svname,…` header; the rows of backend `instances`. */
function parseStats(csv: string): ServerStat[] {
  const [header, ...rows] = csv.trim().split("\n");
  const names = (header ?? "").replace(/^# /, "").split(",");
  const field = (cells: string[], name: string) => cells[names.indexOf(name)] ?? "";
  return rows
    .map((r) => r.split(","))
    .filter((cells) => field(cells, "pxname") === "instances")
    .map((cells) => ({
      name: field(cells, "svname"),
      status: field(cells, "status"),
      retries: Number(field(cells, "wretr")),
      redispatches: Number(field(cells, "wredis")),
      connectionErrors: Number(field(cells, "econ")),
      responseErrors: Number(field(cells, "eresp")),
      responses5xx: Number(field(cells, "hrsp_5xx")),
      total: Number(field(cells, "stot")),
    }));
}
