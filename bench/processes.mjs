/**
 * The bench scripts' servers: child processes on free loopback ports, their
 * output appended to `<work>/<name>.log`, pinned to a CPU when one is given
 * (taskset), stopped together (SIGTERM, then SIGKILL after 10 s) — also when
 * the script itself exits — and what they cost, read from /proc; the machine's
 * stall probe (bench/stall.mjs); and where a part writes its figures (its own
 * section of bench/RESULTS.md).
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { openSync, readFileSync, writeFileSync } from "node:fs";
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

  /**
   * The real service (`node <package.json's nodeFlags, or NODE_FLAGS> <nodeArgs> dist/src/main.js`) as
   * production runs it, on a free port, with `env` over the bench's defaults (warn logs, no guess limit, a
   * closed loopback port as the conversion backend); resolves with its `url` once `/readyz` answers 200.
   * `main`: another build's entry (an A/B against an earlier commit built elsewhere).
   */
  async startBoardline(name, env, nodeArgs = [], main = "dist/src/main.js") {
    const port = await freePort();
    const flags = (process.env.NODE_FLAGS ?? JSON.parse(readFileSync("package.json", "utf8")).config.nodeFlags)
      .split(/\s+/)
      .filter(Boolean);
    const server = this.spawn(name, [process.execPath, ...flags, ...nodeArgs, main], {
      NODE_ENV: "production",
      PORT: String(port),
      HOST: "127.0.0.1",
      LOG_LEVEL: "warn",
      GUESS_LIMIT: "0",
      CONVERSION_API_BASE: "http://127.0.0.1:9",
      ...env,
    });
    const url = `http://127.0.0.1:${port}`;
    for (let i = 0; ; i++) {
      if (server.child.exitCode !== null) {
        throw new Error(`boardline exited at start-up: ${readFileSync(server.logFile, "utf8").slice(-500)}`);
      }
      const ready = await fetch(`${url}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ready) return { ...server, url };
      if (i > 150) throw new Error("boardline not ready after 15 s");
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

/**
 * The CPUs of a part that pins: servers on the first CPU this process may use, this process (the
 * load) on the second; it moves itself there at once. With fewer than two, nothing is pinned ("").
 */
export function splitCpus() {
  const list = execFileSync("taskset", ["-cp", String(process.pid)], { encoding: "utf8" }).split(":")[1] ?? "";
  const allowed = list
    .trim()
    .split(",")
    .flatMap((part) => {
      const [a, b = a] = part.split("-").map(Number);
      return Array.from({ length: b - a + 1 }, (_, i) => a + i);
    });
  const serverCpu = allowed.length >= 2 ? String(allowed[0]) : "";
  const loadCpu = allowed.length >= 2 ? String(allowed[1]) : "";
  if (loadCpu) execFileSync("taskset", ["-cp", loadCpu, String(process.pid)], { stdio: "ignore" });
  return { serverCpu, loadCpu };
}

/**
 * The stall probe (bench/stall.mjs) as run.sh runs it: `measure` on the servers' CPU for 5 s while
 * `spin` keeps the load CPU (this process's, after splitCpus) busy; its JSON line.
 */
export function stallProbe(serverCpu, loadCpu) {
  const measure = `${serverCpu ? `taskset -c ${serverCpu} ` : ""}node bench/stall.mjs measure 5`;
  const both = loadCpu ? `node bench/stall.mjs spin 5 & ${measure}; wait` : measure;
  const run = spawnSync("bash", ["-c", both], { encoding: "utf8" });
  return JSON.parse(run.stdout.trim().split("\n").pop());
}

/** Writes `md` into bench/RESULTS.md between the part's own `start` and `end` markers, formatted as biome formats Markdown. */
export function writeResultsSection(start, end, md, log) {
  const file = "bench/RESULTS.md";
  const text = readFileSync(file, "utf8");
  const section = `${start}\n${md}\n${end}`;
  const at = text.indexOf(start);
  const next =
    at === -1
      ? `${text.trimEnd()}\n\n${section}\n`
      : `${text.slice(0, at)}${section}${text.slice(text.indexOf(end) + end.length)}`;
  writeFileSync(file, next);
  const formatted = spawnSync("npx", ["biome", "format", "--write", file], { encoding: "utf8" });
  if (formatted.status !== 0) log(`could not format ${file}: run npm run format`);
  log(`written into ${file}`);
}
