/**
 * Demo mode as a test meets it: `node dist/src/main.js` with no configuration, its banner, and the
 * commands printed in it, run exactly as pasted into bash.
 */
import { type ChildProcess, execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { ROOT } from "../harness/build-dist.js";
import { RPC_PATHS } from "../harness/routes.js";
import { sleep } from "../harness/sleep.js";
import { spawnTied } from "../harness/tied-spawn.js";

export const MAIN = join(ROOT, "dist", "src", "main.js");

/** A clean environment: nothing of the runner's REDIS_*, JWT_*, PORT or NODE_ENV. */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? "", ...extra };
}

export interface RunningDemo {
  readonly proc: ChildProcess;
  /** From "boardline demo is listening on" to the end of the banner. */
  readonly banner: string;
  /** The URL the banner names. */
  readonly url: string;
}

/** Starts the demo on a free port (dist/ must be built), with `env` besides, and waits for its whole banner. */
export async function startDemo(env: Record<string, string> = {}): Promise<RunningDemo> {
  const proc = spawnTied(process.execPath, [MAIN], {
    cwd: ROOT,
    env: cleanEnv({ PORT: "0", ...env }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  proc.stdout?.setEncoding("utf8").on("data", (d: string) => (stdout += d));
  const deadline = Date.now() + 15_000;
  // The banner ends with the buf curl command's URL line.
  while (!stdout.includes(`${RPC_PATHS.mute}\n`)) {
    if (proc.exitCode !== null || Date.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`no banner; output so far:\n${stdout}`);
    }
    await sleep(50);
  }
  const banner = stdout.slice(stdout.indexOf("boardline demo is listening on"));
  const url = /boardline demo is listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(banner)?.[1] ?? "";
  return { proc, banner, url };
}

/** Commands printed in the banner: a line starting with `prefix`, plus its `\` continuation lines. */
export function printedCommands(banner: string, prefix: string): string[] {
  const lines = banner.split("\n");
  const commands: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i]?.startsWith(prefix)) continue;
    const parts = [lines[i] ?? ""];
    while ((parts.at(-1) ?? "").endsWith("\\") && i + 1 < lines.length) parts.push(lines[++i] ?? "");
    commands.push(parts.join("\n"));
  }
  return commands;
}

/** The `export NAME='value'` lines of the banner, as the example callers read them. */
export function exportedVariables(banner: string): Record<string, string> {
  const found = [...banner.matchAll(/^export (BOARDLINE_\w+)='([^']*)'$/gm)];
  return Object.fromEntries(found.map((m) => [m[1] ?? "", m[2] ?? ""]));
}

/** Runs a printed command exactly as pasted into bash. */
export async function paste(command: string): Promise<string> {
  const { stdout } = await promisify(execFile)("bash", ["-c", command], { cwd: ROOT, timeout: 20_000 });
  return stdout;
}
