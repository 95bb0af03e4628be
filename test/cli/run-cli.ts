/**
 * Runs the built operator CLI (`node dist/src/cli/main.js`) as operators do: a
 * child process with only the environment it is given (plus PATH), never the
 * test runner's. Shared by the CLI's test files.
 */
import { join } from "node:path";
import { expect } from "vitest";
import { ROOT } from "../harness/build-dist.js";
import { redisUrl } from "../harness/redis-url.js";
import { spawnTied } from "../harness/tied-spawn.js";

export const CLI = join(ROOT, "dist", "src", "cli", "main.js");
export const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

export interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

export interface CliOptions {
  /** Added to the base environment; `undefined` removes a variable. */
  readonly env?: Record<string, string | undefined>;
  readonly input?: string;
  readonly onStdout?: (soFar: string) => void;
}

/** What every run gets: the test Redis under `prefix`, and `jwtSecret`. */
export interface CliWorld {
  readonly prefix: string;
  readonly jwtSecret: string;
}

/** The CLI's base environment for `world`. */
export function baseEnv(world: CliWorld): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "",
    REDIS_URL: redisUrl(),
    REDIS_KEY_PREFIX: world.prefix,
    JWT_SECRET: world.jwtSecret,
  };
}

/** `cli` runs a command and answers how it ended; `ok` also expects exit 0 and nothing on stderr. */
export function cliRunner(world: () => CliWorld) {
  function cli(args: string[], o: CliOptions = {}): Promise<Run> {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries({ ...baseEnv(world()), ...o.env })) if (v !== undefined) env[k] = v;
    const started = Date.now();
    return new Promise((resolve, reject) => {
      const child = spawnTied(process.execPath, [CLI, ...args], { cwd: ROOT, env, stdio: ["pipe", "pipe", "pipe"] });
      let stdout = "";
      let stderr = "";
      child.stdout.setEncoding("utf8").on("data", (d: string) => {
        stdout += d;
        o.onStdout?.(stdout);
      });
      child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
      const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      child.on("error", reject);
      child.on("close", (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr, ms: Date.now() - started });
      });
      child.stdin.end(o.input ?? "");
    });
  }

  async function ok(args: string[], o: CliOptions = {}): Promise<string> {
    const r = await cli(args, o);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: "" });
    return r.stdout;
  }

  return { cli, ok };
}

/** Exactly one line on stderr. */
export function oneLine(stderr: string): string {
  expect(stderr.endsWith("\n")).toBe(true);
  const lines = stderr.trimEnd().split("\n");
  expect(lines).toHaveLength(1);
  return lines[0] ?? "";
}
