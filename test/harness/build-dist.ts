/**
 * For tests that run the built processes (`node dist/src/main.js`, the CLI):
 * compiles src/ to dist/ with tsconfig.build.json unless dist/ is already newer
 * than every source file. Test files run in parallel processes, so a lock
 * directory makes them build one at a time, and a file never starts a process
 * while another file's build is rewriting dist/.
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { sleep } from "./sleep.js";

/** The repository: the nearest folder with a package.json (test/harness, or dist/test/harness for the soak). */
export const ROOT = repositoryRoot(fileURLToPath(new URL(".", import.meta.url)));
const LOCK = join(ROOT, "dist", ".build-lock");
const STALE_LOCK_MS = 120_000;
/** Outputs whose age is compared with the sources. */
const OUTPUTS = ["dist/src/main.js", "dist/src/cli/main.js"];

export async function ensureBuilt(): Promise<void> {
  mkdirSync(join(ROOT, "dist"), { recursive: true });
  await acquire();
  try {
    if (isFresh()) return;
    const tsc = join(ROOT, "node_modules", "typescript", "bin", "tsc");
    try {
      await promisify(execFile)(process.execPath, [tsc, "-p", "tsconfig.build.json"], {
        cwd: ROOT,
        maxBuffer: 16 << 20,
      });
    } catch (e) {
      const out = (e as { stdout?: string }).stdout ?? "";
      throw new Error(`build failed:\n${out.slice(0, 4000)}`);
    }
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

function isFresh(): boolean {
  let oldestOutput = Number.POSITIVE_INFINITY;
  for (const out of OUTPUTS) {
    try {
      oldestOutput = Math.min(oldestOutput, statSync(join(ROOT, out)).mtimeMs);
    } catch {
      return false;
    }
  }
  return newestSource(join(ROOT, "src")) <= oldestOutput && newestSource(join(ROOT, "gen")) <= oldestOutput;
}

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path));
    else if (entry.name.endsWith(".ts")) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

async function acquire(): Promise<void> {
  for (;;) {
    try {
      mkdirSync(LOCK);
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    try {
      if (Date.now() - statSync(LOCK).mtimeMs > STALE_LOCK_MS) rmSync(LOCK, { recursive: true, force: true });
    } catch {
      // gone in between: try again
    }
    await sleep(200);
  }
}

function repositoryRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, "package.json"))) return `${dir.replace(/\/$/, "")}/`;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}
