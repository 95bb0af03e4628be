/**
 * The bench scripts' servers: child processes on free loopback ports, their
 * output appended to `<work>/<name>.log`, pinned to a CPU when one is given
 * (taskset), stopped together (SIGTERM, then SIGKILL after 10 s) — also when
 * the script itself exits — and what they cost, read from /proc.
 */
import { spawn } from "node:child_process";
import { openSync, readFileSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";

/** Microseconds per clock tick of /proc/<pid>/stat (USER_HZ is 100 on Linux). */
export const TICK_US = 1e6 / 100;

export function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** utime + stime in clock ticks (fields 14 and 15 of /proc/<pid>/stat). */
export function cpuTicks(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8")
    .replace(/^.*\) /, "")
    .split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

/** A `key:` line of /proc/<pid>/status in kB (VmRSS, VmHWM, …). */
export function procKb(pid, key) {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith(`${key}:`));
  return Number(line?.split(/\s+/)[1]);
}

/** The servers one script starts: in `work`, on `cpu` ("" or undefined: anywhere). */
export class Servers {
  #children = new Set();

  constructor({ work, cpu }) {
    this.work = work;
    this.cpu = cpu ?? "";
    process.once("exit", () => {
      for (const child of this.#children) child.kill("SIGKILL");
    });
  }

  /** Starts `argv` with `env` over this process's environment. */
  spawn(name, argv, env = {}) {
    const [cmd, ...args] = this.cpu ? ["taskset", "-c", this.cpu, ...argv] : argv;
    const logFile = join(this.work, `${name}.log`);
    const child = spawn(cmd, args, {
      env: { ...process.env, ...env },
      stdio: ["ignore", openSync(logFile, "a"), openSync(logFile, "a")],
    });
    this.#children.add(child);
    child.once("exit", () => this.#children.delete(child));
    return { child, pid: child.pid, logFile, stop: () => stop(child) };
  }

  /** A redis-server without persistence, answering PING. */
  async startRedis(name = "redis") {
    const port = await freePort();
    const server = this.spawn(name, [
      "redis-server",
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--save",
      "",
      "--appendonly",
      "no",
      "--dir",
      this.work,
    ]);
    const url = `redis://127.0.0.1:${port}`;
    for (let i = 0; ; i++) {
      if (server.child.exitCode !== null)
        throw new Error(`redis-server exited: ${readFileSync(server.logFile, "utf8")}`);
      const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on("error", () => {}); // not listening yet: asked again below
      const ok = await probe.connect().then(
        () => probe.ping().then(() => true),
        () => false,
      );
      probe.disconnect();
      if (ok) return { ...server, url };
      if (i > 100) throw new Error("redis-server not answering after 10 s");
      await sleep(100);
    }
  }

  /** Stops every server still running, the last started first. */
  async stopAll() {
    for (const child of [...this.#children].reverse()) await stop(child);
  }
}

async function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  await exited;
  clearTimeout(timer);
}
