/**
 * The real service process (`node dist/src/main.js`, built by the globalSetup)
 * on a free loopback port, for tests that need signals, exit codes or the
 * configuration read from the environment.
 */
import type { ChildProcess } from "node:child_process";
import { ROOT } from "./build-dist.js";
import { DEVELOPMENT_KEYS } from "./development-keys.js";
import { eventually } from "./eventually.js";
import { spawnTied } from "./tied-spawn.js";

export interface MainProcess {
  /** `http://<HOST>:<port>`, as its "boardline is listening" line says (`http://127.0.0.1:<port>` by default). */
  readonly url: string;
  readonly port: number;
  /** The port `/metrics` is served on, as its "boardline is listening" line says (`port` when on the public one). */
  readonly metricsPort: number;
  /** `http://<HOST>:<metricsPort>` */
  readonly metricsUrl: string;
  readonly proc: ChildProcess;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
}

/** Every process started, so a test that fails mid-start does not leave one behind. */
const running = new Set<ChildProcess>();
process.once("exit", () => {
  for (const proc of running) proc.kill("SIGKILL");
});

/**
 * Starts it with only PATH, PORT=0, HOST=127.0.0.1, SHUTDOWN_DELAY_MS=0 (a SIGTERM stops it at
 * once; a test of the delay sets it), METRICS_PORT=0 (not the fixed default, which processes
 * started side by side would share; a test of the default sets it empty, which counts as unset;
 * left out when `env` asks for METRICS_ON_PUBLIC_PORT=true, which refuses it), the development
 * keys (DEVELOPMENT_KEYS, which production requires to be set) and `env`; resolves once it logs
 * its URL.
 * `maxOpenFiles` lowers its file descriptor limit (`ulimit -n`, through bash).
 */
export async function startMainProcess(
  env: Record<string, string>,
  o: { maxOpenFiles?: number } = {},
): Promise<MainProcess> {
  const [command, args] =
    o.maxOpenFiles === undefined
      ? [process.execPath, ["dist/src/main.js"]]
      : ["bash", ["-c", `ulimit -n ${o.maxOpenFiles} && exec "$0" dist/src/main.js`, process.execPath]];
  const proc = spawnTied(command, args, {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      PORT: "0",
      HOST: "127.0.0.1",
      SHUTDOWN_DELAY_MS: "0",
      ...(env.METRICS_ON_PUBLIC_PORT === "true" ? {} : { METRICS_PORT: "0" }),
      ...DEVELOPMENT_KEYS,
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(proc);
  proc.once("exit", () => running.delete(proc));
  let out = "";
  proc.stderr?.on("data", (d) => {
    out += String(d);
  });
  const { url, metricsPort } = await new Promise<{ url: string; metricsPort: number }>((resolve, reject) => {
    proc.stdout?.on("data", (d) => {
      out += String(d);
      const lines = out.split("\n").slice(0, -1); // whole lines only
      const line = lines.find((l) => l.includes('"msg":"boardline is listening"'));
      if (line !== undefined) resolve(JSON.parse(line) as { url: string; metricsPort: number });
    });
    proc.once("exit", () => reject(new Error(`exited early: ${out}`)));
  });
  const metricsUrl = new URL(url);
  metricsUrl.port = String(metricsPort);
  return {
    url,
    port: Number(new URL(url).port),
    metricsPort,
    metricsUrl: metricsUrl.origin,
    proc,
    output: () => out,
  };
}

/**
 * Stops `running` (SIGTERM, and waits for its exit), starts the process again
 * with `env` and resolves once its `/readyz` answers 200: a restart with other
 * settings, as an operator's rolling change makes.
 */
export async function restartMainProcess(
  running: MainProcess | undefined,
  env: Record<string, string>,
): Promise<MainProcess> {
  if (running !== undefined && running.proc.exitCode === null) {
    const stopped = new Promise((resolve) => running.proc.once("exit", resolve));
    running.proc.kill("SIGTERM");
    await stopped;
  }
  const started = await startMainProcess(env);
  await eventually(async () => (await fetch(`${started.url}/readyz`)).status === 200, 5_000, "the server to be ready");
  return started;
}
