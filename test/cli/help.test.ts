/**
 * The operator CLI's help: every command and the environment are listed, and
 * `whiteboard set` explains how to keep secrets out of shell history; a
 * command that talked to Redis exits promptly.
 */
import { randomBytes } from "node:crypto";
import { beforeAll, describe, expect, test } from "vitest";
import { ensureBuilt } from "../harness/build-dist.js";
import { uniquePrefix } from "../harness/redis-url.js";
import { cliRunner } from "./run-cli.js";

const world = { prefix: uniquePrefix("cli-help"), jwtSecret: randomBytes(32).toString("hex") };
const { cli, ok } = cliRunner(() => world);

beforeAll(() => ensureBuilt(), 120_000);

describe("help", () => {
  test("--help lists every command and the environment", async () => {
    const out = await ok(["--help"]);
    for (const word of [
      "channel",
      "whiteboard",
      "token",
      "mute",
      "conversion",
      "REDIS_URL",
      "JWT_SECRET",
      "Exit codes",
    ]) {
      expect(out).toContain(word);
    }
  });

  test("whiteboard set --help explains how to keep secrets out of shell history", async () => {
    const out = await ok(["whiteboard", "set", "--help"]);
    for (const word of [
      "--secret-key-stdin",
      "--sdk-token-stdin",
      "BOARDLINE_SECRET_KEY",
      "BOARDLINE_SDK_TOKEN",
      "us-sv",
      "--conversion-qps",
    ]) {
      expect(out).toContain(word);
    }
  });

  test("the process does not linger after a Redis command", async () => {
    // The CLI force-exits 2 s after finishing should a handle stay open; a clean exit is much sooner.
    const r = await cli(["mute", "show", "p", "c"]);
    expect(r.code).toBe(0);
    expect(r.ms).toBeLessThan(1900);
  });
});
