import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConfigError, loadConfig } from "../../src/config/index.js";

/** A JWT_SECRET of the minimum length. */
export const SECRET = "s".repeat(32);

/** The ConfigError loadConfig throws for `env` (fails the test when it throws none). */
export function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) return e;
    throw e;
  }
  throw new Error(`no ConfigError for ${JSON.stringify(env)}`);
}

/** Writes `content` to a fresh temporary file and returns its path. */
export function tempFile(name: string, content: string): string {
  const path = join(mkdtempSync(join(tmpdir(), "boardline-config-")), name);
  writeFileSync(path, content);
  return path;
}
