/**
 * vitest globalSetup: one redis-server for the whole run, unless REDIS_URL is
 * given. Runs in the main process before the fork workers exist, so the URL
 * reaches tests through `project.provide` (read it with `redisUrl()` from
 * ./redis-url.js), not through globals.
 *
 * It also compiles src/ to dist/ once, so the tests that run the real
 * processes (`node dist/src/main.js`, the CLI) run the code under test.
 */
import { execFileSync } from "node:child_process";
import type { TestProject } from "vitest/node";
import { startRedisServer } from "./redis-server.js";
// The `ProvidedContext` declaration of "redisUrl" lives in ./redis-url.ts.

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  execFileSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tsconfig.build.json"], {
    stdio: "inherit",
  });
  const given = process.env.REDIS_URL;
  if (given !== undefined && given !== "") {
    project.provide("redisUrl", given);
    return undefined;
  }
  const server = await startRedisServer();
  project.provide("redisUrl", server.url);
  return () => server.stop();
}
