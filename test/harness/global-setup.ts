/**
 * vitest globalSetup: one redis-server for the whole run, unless REDIS_URL is
 * given. Runs in the main process before the fork workers exist, so the URL
 * reaches tests through `project.provide` (read it with `redisUrl()` from
 * ./redis-url.js), not through globals.
 */
import type { TestProject } from "vitest/node";
import { startRedisServer } from "./redis-server.js";
// The `ProvidedContext` declaration of "redisUrl" lives in ./redis-url.ts.

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const given = process.env.REDIS_URL;
  if (given !== undefined && given !== "") {
    project.provide("redisUrl", given);
    return undefined;
  }
  const server = await startRedisServer();
  project.provide("redisUrl", server.url);
  return () => server.stop();
}
