/**
 * The bench scripts' servers: child processes on free loopback ports, their
 * output appended to `<work>/<name>.log`, pinned to a CPU when one is given
 * (taskset), stopped together (SIGTERM, then SIGKILL after 10 s) — also when
 * the script itself exits — and what they cost, read from /proc; the machine's
 * stall probe (bench/lib/stall.mjs).
 */
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, openSync, readdirSync, readFileSync, rmSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";

/** Microseconds per clock tick of /proc/<pid>/stat (USER_HZ is 100 on Linux). */
export const TICK_US = 1e6 / 100;

/** @returns {Promise<number>} a loopback port free a moment ago */
export function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = /** @type {net.AddressInfo} */ (s.address());
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

/**
 * A server's memory: VmRSS in kB (the median of 5 readings 200 ms apart), then — for a server
 * started with `--expose-gc -r ./bench/lib/gc-probe.cjs` and BENCH_GC_PROBE_OUT=`probeFile` — the live
 * heap and the external memory after two full GCs, in kB (NaN without the probe), its open
 * file descriptors, V8's heap spaces as they were before the GCs, and VmRSS after them.
 */
export async function serverMemory(pid, probeFile) {
  const readings = [];
  for (let i = 0; i < 5; i++) {
    readings.push(procKb(pid, "VmRSS"));
    if (i < 4) await sleep(200);
  }
  readings.sort((a, b) => a - b);
  rmSync(probeFile, { force: true });
  process.kill(pid, "SIGUSR2");
  for (let i = 0; i < 300 && !existsSync(probeFile); i++) await sleep(50);
  const usage = existsSync(probeFile) ? JSON.parse(readFileSync(probeFile, "utf8")) : {};
  return {
    rssKb: readings[2],
    heapKb: usage.heapUsed / 1024,
    externalKb: usage.external / 1024,
    fds: readdirSync(`/proc/${pid}/fd`).length,
    /** V8's heap spaces before the GCs ([] without the probe), and the RSS once the GCs ran. */
    spaces: usage.spaces ?? [],
    rssAfterGcKb: procKb(pid, "VmRSS"),
  };
}

/**
 * The longest event-loop delay a boardline saw since the last call, in ms (prom-client's
 * `nodejs_eventloop_lag_max_seconds`, which each scrape resets); `url`: its metrics port's
 * (`metricsUrl` of `Servers.startBoardline`), as the public port answers /metrics 404.
 */
export async function loopLagMaxMs(url) {
  const text = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(10_000) }).then((r) => r.text());
  return Number(/^boardline_nodejs_eventloop_lag_max_seconds (\S+)/m.exec(text)?.[1]) * 1000;
}

/** How many series (sample lines) the instance's /metrics holds: what one scrape of it costs Prometheus. */
export async function seriesCount(url) {
  const text = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(10_000) }).then((r) => r.text());
  return text.split("\n").filter((line) => line !== "" && !line.startsWith("#")).length;
}

/** The V8 flags the servers run with: NODE_FLAGS, else package.json's `config.nodeFlags` (as `npm start`). */
export function nodeFlags() {
  return (process.env.NODE_FLAGS ?? JSON.parse(readFileSync("package.json", "utf8")).config.nodeFlags)
    .split(/\s+/)
    .filter(Boolean);
}

/**
 * The C allocator every process a bench script starts runs with, as the image runs node: deploy/jemalloc.sh's
 * rule (jemalloc when the machine has Debian's libjemalloc2; an LD_PRELOAD already set, even empty, is kept),
 * applied once to this process's environment, which the servers inherit; bench/run.sh applies it before.
 */
if (process.env.LD_PRELOAD === undefined) {
  const print = 'printf "%s\\n%s" "$' + '{LD_PRELOAD-}" "$' + '{MALLOC_CONF-}"';
  const [preload = "", conf = ""] = execFileSync("bash", ["deploy/jemalloc.sh", "sh", "-c", print], {
    encoding: "utf8",
  }).split("\n");
  process.env.LD_PRELOAD = preload;
  if (conf !== "") process.env.MALLOC_CONF = conf;
}
/** The allocator in words, for the results' machine lines. */
export const ALLOCATOR = process.env.LD_PRELOAD
  ? `LD_PRELOAD=${process.env.LD_PRELOAD}${process.env.MALLOC_CONF ? ` MALLOC_CONF=${process.env.MALLOC_CONF}` : ""}`
  : "glibc malloc";

/** The servers one script starts: in `work`, on `cpu` ("" or undefined: anywhere). */
export class Servers {
  #children = new Set();

  /** @param {{ work: string, cpu?: string }} options */
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
   * The real service (`node <nodeFlags()> <nodeArgs> <root>/dist/src/main.js`) as production runs it, on a
   * free port and /metrics on another (METRICS_PORT: the fixed default would clash between instances),
   * with `env` over the bench's defaults (warn logs, no guess limit, a closed loopback port as the
   * conversion backend); resolves with its `url` and `metricsUrl` once `/readyz` answers 200. `root`:
   * another build of boardline (a directory holding its dist/, e.g. an earlier commit's) instead of this
   * checkout's.
   */
  async startBoardline(name, env, nodeArgs = [], root = ".") {
    const port = await freePort();
    const metricsPort = await freePort();
    // Loaded here, not at the top: it reads dist/, which the bench builds after loading this module.
    const { DEVELOPMENT_KEYS } = await import("./development-keys.mjs");
    const server = this.spawn(name, [process.execPath, ...nodeFlags(), ...nodeArgs, join(root, "dist/src/main.js")], {
      NODE_ENV: "production",
      ...DEVELOPMENT_KEYS,
      PORT: String(port),
      METRICS_PORT: String(metricsPort),
      HOST: "127.0.0.1",
      LOG_LEVEL: "warn",
      GUESS_LIMIT: "0",
      CONVERSION_API_BASE: "http://127.0.0.1:9",
      ...env,
    });
    const url = `http://127.0.0.1:${port}`;
    const metricsUrl = `http://127.0.0.1:${metricsPort}`;
    for (let i = 0; ; i++) {
      if (server.child.exitCode !== null) {
        throw new Error(`boardline exited at start-up: ${readFileSync(server.logFile, "utf8").slice(-500)}`);
      }
      const ready = await fetch(`${url}/readyz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ready) return { ...server, url, metricsUrl };
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
      const [a = 0, b = a] = part.split("-").map(Number);
      return Array.from({ length: b - a + 1 }, (_, i) => a + i);
    });
  const serverCpu = allowed.length >= 2 ? String(allowed[0]) : "";
  const loadCpu = allowed.length >= 2 ? String(allowed[1]) : "";
  if (loadCpu) execFileSync("taskset", ["-cp", loadCpu, String(process.pid)], { stdio: "ignore" });
  return { serverCpu, loadCpu };
}

/**
 * bench/lib/stall.mjs's reading: `measure` for 5 s on `serverCpu` while `spin` keeps `loadCpu` busy (as the
 * CPUs are during a cell; "" pins nothing) — how much CPU time the machine itself takes from the servers,
 * the share of a p99 no server code can remove. Its JSON line.
 */
export function stallProbe(serverCpu, loadCpu) {
  const pin = (cpu, args) => (cpu ? ["taskset", "-c", cpu, process.execPath, ...args] : [process.execPath, ...args]);
  const [sc, ...sa] = pin(loadCpu, ["bench/lib/stall.mjs", "spin", "5"]);
  const spinner = spawn(sc, sa, { stdio: "ignore" });
  const [mc, ...ma] = pin(serverCpu, ["bench/lib/stall.mjs", "measure", "5"]);
  const out = spawnSync(mc, ma, { encoding: "utf8" });
  spinner.kill();
  return JSON.parse(out.stdout.trim());
}

/** One CPU's time so far (its /proc/stat line, in clock ticks): `busy` (all but idle and iowait) and `total`. */
export function cpuTime(cpu) {
  const line = readFileSync("/proc/stat", "utf8")
    .split("\n")
    .find((l) => l.startsWith(`cpu${cpu} `));
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = (line ?? "")
    .split(/\s+/)
    .slice(1)
    .map(Number);
  const busy = user + nice + system + irq + softirq + steal;
  return { busy, total: busy + idle + iowait };
}

/** The middle value (the mean of the two middle ones for an even count); NaN for none. */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length / 2;
  return s.length === 0 ? Number.NaN : s.length % 2 === 1 ? s[Math.floor(m)] : (s[m - 1] + s[m]) / 2;
}
