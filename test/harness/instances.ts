/**
 * Several boardline processes (`node dist/src/main.js`, ./main-process.ts) on
 * one Redis, as replicas behind a load balancer: the same configuration, each
 * on a loopback port of its own that it keeps across restarts (where its
 * clients, and a balancer, expect it). For test/faults/many-instances.test.ts
 * and `SOAK_INSTANCES=3 npm run soak`.
 */
import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { startMainProcess } from "./main-process.js";
import { freePort } from "./redis-server.js";
import { sleep } from "./sleep.js";

export interface Instance {
  /** 0, 1, 2, … in start order. */
  readonly index: number;
  readonly port: number;
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** The running process; undefined after `kill` until `restart`. */
  readonly proc: ChildProcess | undefined;
  /** Every process this instance has had (the killed ones too), to check none is left. */
  readonly pids: readonly number[];
  /** SIGKILL, at once: a crash, as its clients and the balancer see it. */
  kill(): void;
  /** Starts it again on its port; resolves with the ms from the spawn until `/readyz` answers 200. */
  restart(): Promise<number>;
  /** SIGTERM and waits for the exit; resolves with the exit code (null when it was not running). */
  stop(): Promise<number | null>;
}

/** How long an instance may take to listen and turn ready. */
const READY_TIMEOUT_MS = 20_000;

/**
 * Starts `count` instances with `env` (PORT, HOST, NODE_ENV and LOG_LEVEL are
 * the harness's) and waits until each is ready. A failure stops the ones started.
 */
export async function startInstances(count: number, env: Record<string, string>): Promise<Instance[]> {
  const instances: Instance[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const instance = newInstance(i, await freePort(), env);
      instances.push(instance);
      await instance.restart();
    }
  } catch (e) {
    await Promise.all(instances.map((s) => s.stop()));
    throw e;
  }
  return instances;
}

function newInstance(index: number, port: number, env: Record<string, string>): Instance {
  let proc: ChildProcess | undefined;
  const pids: number[] = [];
  const url = `http://127.0.0.1:${port}`;
  return {
    index,
    port,
    url,
    get proc() {
      return proc;
    },
    pids,
    kill() {
      proc?.kill("SIGKILL");
      proc = undefined;
    },
    async restart() {
      const started = Date.now();
      // NODE_ENV=production: no demo, Redis required; info: the harness reads the port from the "listening" line.
      const p = await startMainProcess({ ...env, NODE_ENV: "production", LOG_LEVEL: "info", PORT: String(port) });
      proc = p.proc;
      if (p.proc.pid !== undefined) pids.push(p.proc.pid);
      await waitReady(url, READY_TIMEOUT_MS);
      return Date.now() - started;
    },
    async stop() {
      const p = proc;
      proc = undefined;
      if (p === undefined || p.exitCode !== null || p.signalCode !== null) return null;
      const exited = once(p, "exit") as Promise<[number | null]>;
      p.kill("SIGTERM");
      const timer = setTimeout(() => p.kill("SIGKILL"), 15_000);
      const [code] = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** Polls `GET /readyz` until it answers 200, as a balancer's health check would. */
export async function waitReady(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2_000) }).catch(() => undefined);
    await res?.arrayBuffer();
    if (res?.status === 200) return;
    if (Date.now() > deadline) throw new Error(`${url} was not ready within ${timeoutMs} ms`);
    await sleep(20);
  }
}

/** True when no process of these pids is alive (a zombie reaped by us counts as gone). */
export function noneAlive(pids: readonly number[]): boolean {
  return pids.every((pid) => {
    try {
      process.kill(pid, 0);
      return false;
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === "ESRCH";
    }
  });
}
