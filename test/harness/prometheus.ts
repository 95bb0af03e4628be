/**
 * Debian's `prometheus` (which `npm test` installs where it is missing) on a free loopback port, from
 * a temporary directory of its own, scraping the given targets as job `boardline` and evaluating
 * every second, so what a live boardline exports is in its storage within a second or two. Used by
 * the alert rules' live test and by `npm run dashboard:preview`.
 */
import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./redis-server.js";
import { sleep } from "./sleep.js";
import { spawnTied } from "./tied-spawn.js";

const POLL_MS = 200;

export interface Prometheus {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** Everything it printed so far. */
  output(): string;
  /** Polls `check` every POLL_MS until it holds; fails after `ms` with what Prometheus printed. */
  until(what: string, ms: number, check: () => Promise<boolean>): Promise<void>;
  /** The value of an instant query's single result, or undefined when it has none. */
  query(expr: string): Promise<number | undefined>;
  /** SIGTERM (SIGKILL after 5 s), then its directory removed. */
  stop(): Promise<void>;
}

export interface PrometheusOptions {
  /** `host:port` of each boardline's /metrics. */
  readonly targets: readonly string[];
  /** The text of a rule file for it to load and evaluate (none when absent). */
  readonly rules?: string;
}

/** Resolves once it is ready and has scraped every target at least once. */
export async function startPrometheus(o: PrometheusOptions): Promise<Prometheus> {
  const dir = mkdtempSync(join(tmpdir(), "bl-prometheus-"));
  if (o.rules !== undefined) writeFileSync(join(dir, "alerts.yaml"), o.rules);
  writeFileSync(
    join(dir, "prometheus.yml"),
    [
      "global:",
      "  scrape_interval: 1s",
      "  scrape_timeout: 1s",
      "  evaluation_interval: 1s",
      ...(o.rules === undefined ? [] : ["rule_files:", "  - alerts.yaml"]),
      "scrape_configs:",
      "  - job_name: boardline",
      "    static_configs:",
      `      - targets: [${o.targets.map((t) => JSON.stringify(t)).join(", ")}]`,
      "",
    ].join("\n"),
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  let output = "";
  const proc: ChildProcess = spawnTied(
    "prometheus",
    [
      `--config.file=${join(dir, "prometheus.yml")}`,
      `--storage.tsdb.path=${join(dir, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`,
    ],
    { cwd: dir, stdio: ["ignore", "pipe", "pipe"] },
  );
  proc.stdout?.on("data", (d) => {
    output += String(d);
  });
  proc.stderr?.on("data", (d) => {
    output += String(d);
  });
  proc.once("error", (e) => {
    output += `${e.message} (apt-get install prometheus)\n`;
  });

  const until = async (what: string, ms: number, check: () => Promise<boolean>): Promise<void> => {
    const deadline = Date.now() + ms;
    for (;;) {
      try {
        if (await check()) return;
      } catch {
        // Not answering yet: the deadline below decides.
      }
      if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms. Prometheus said:\n${output}`);
      await sleep(POLL_MS);
    }
  };
  const query = async (expr: string): Promise<number | undefined> => {
    const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = (await res.json()) as { data: { result: { value: [number, string] }[] } };
    const first = body.data.result[0];
    return first === undefined ? undefined : Number(first.value[1]);
  };
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = once(proc, "exit");
      proc.kill("SIGTERM");
      await Promise.race([exited, sleep(5_000).then(() => proc.kill("SIGKILL"))]);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await until("Prometheus ready", 15_000, async () => (await fetch(`${url}/-/ready`)).ok);
    await until("every target scraped", 15_000, async () => {
      return (await query('count(up{job="boardline"} == 1)')) === o.targets.length;
    });
  } catch (e) {
    await stop();
    throw e;
  }
  return { url, output: () => output, until, query, stop };
}
