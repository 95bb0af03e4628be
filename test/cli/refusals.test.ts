/**
 * The operator CLI's refusals, as operators meet them: a usage error exits 2
 * with a message naming what is wrong; a configuration failure (no Redis, a
 * bad REDIS_URL, an unreachable Redis, a missing or short JWT_SECRET) exits 1
 * with one line, never echoing credentials.
 */
import { randomBytes } from "node:crypto";
import { beforeAll, describe, expect, test } from "vitest";
import { ensureBuilt } from "../harness/build-dist.js";
import { uniquePrefix } from "../harness/redis-url.js";
import { cliRunner, JWT, oneLine } from "./run-cli.js";

const world = { prefix: uniquePrefix("cli-refusals"), jwtSecret: randomBytes(32).toString("hex") };
const { cli, ok } = cliRunner(() => world);

beforeAll(() => ensureBuilt(), 120_000);

describe("usage errors exit 2 with a clear message", () => {
  test.each([
    [["channel", "create", "p"], "missing required argument 'channel'"],
    [["channel", "create", "p", "c"], "--host-passphrase is required (or --generate"],
    [["channel", "create", "p{x}", "c", "--generate"], "project must not contain"],
    [["channel", "create", "p", "c", "--generate", "--expire-time", "tomorrow"], "expected an ISO 8601 time"],
    [["channel", "rotate", "p", "c"], "required option '--role <role>' not specified"],
    [["channel", "rotate", "p", "c", "--role", "owner"], "Allowed choices are host, attendee"],
    [["channel", "list", "p", "--page-size", "1001"], "expected a whole number from 1 to 1000"],
    [["channel", "reindex", "--batch", "0"], "expected a whole number from 1 to 100000"],
    [
      ["whiteboard", "set", "p", "--region", "mars", "--sdk-token", "t"],
      "Allowed choices are us-sv, sg, in-mum, eu, cn-hz",
    ],
    [["whiteboard", "set", "p", "--sdk-token", "t"], "required option '--region <region>' not specified"],
    [["whiteboard", "set", "p", "--region", "eu"], "credentials are required"],
    [["whiteboard", "set", "p", "--region", "eu", "--sdk-token", "t", "--access-key", "a"], "not both"],
    [
      ["whiteboard", "set", "p", "--region", "eu", "--access-key", "a"],
      "--secret-key (or --secret-key-stdin) is required",
    ],
    [
      ["whiteboard", "set", "p", "--region", "eu", "--sdk-token", "t", "--conversion-qps", "0"],
      "expected a whole number from 1 to 1000",
    ],
    [
      ["whiteboard", "set", "p", "--region", "eu", "--sdk-token", "t", "--conversion-qps", "1001"],
      "expected a whole number from 1 to 1000",
    ],
    [["mute", "show", "p", "c", "--events", "0"], "expected a whole number from 1 to 10000"],
    [["mute", "show", "p/x", "c"], "project must not contain '{', '}' or '/'"],
    [["mute", "state", "p", "c{"], "channel must not contain '{' or '}'"],
    [["mute", "watch", "p", "}c"], "channel must not contain '{' or '}'"],
    [["conversion", "show", "t}x"], "uuid must be 1 to 128 letters, digits, '-' or '_'"],
    [["conversion", "watch", ""], "uuid must be 1 to 128 letters, digits, '-' or '_'"],
    [["token", "mint", "--project", "p/x"], "project must not contain '{', '}' or '/'"],
    [["token", "mint"], "required option '--project <project>' not specified"],
    [["token", "mint", "--project", "p", "--ttl", "soon"], "expected a duration like 90s, 15m, 1h or 7d"],
    [["frobnicate"], "unknown command 'frobnicate'"],
  ])("%j", async (args, message) => {
    const r = await cli(args);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(/^boardline: error: /);
    expect(r.stderr).toContain(message);
  });

  test("no command at all prints the help on stderr, exit 2", async () => {
    const r = await cli([]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("Usage: boardline");
  });
});

describe("configuration failures exit 1 with one line", () => {
  test("no Redis configured", async () => {
    const r = await cli(["mute", "show", "p", "c"], { env: { REDIS_URL: undefined } });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(oneLine(r.stderr)).toMatch(/^boardline: no Redis configured: set REDIS_URL .*no in-memory mode$/);
  });

  test("an invalid REDIS_URL is named", async () => {
    const r = await cli(["channel", "delete", "p", "c"], { env: { REDIS_URL: "localhost:6379" } });
    expect(r.code).toBe(1);
    expect(oneLine(r.stderr)).toBe("boardline: invalid configuration: REDIS_URL must start with redis:// or rediss://");
  });

  test("an unreachable Redis is named, without credentials", async () => {
    const r = await cli(["mute", "show", "p", "c"], { env: { REDIS_URL: "redis://user:hunter2@127.0.0.1:1" } });
    expect(r.code).toBe(1);
    const line = oneLine(r.stderr);
    expect(line).toMatch(/^boardline: cannot reach Redis at redis:\/\/127\.0\.0\.1:1: .*ECONNREFUSED/);
    expect(line).not.toContain("hunter2");
    // Gives up after its connect time-out (3 s) and does not linger.
    expect(r.ms).toBeLessThan(6000);
  });

  test("token mint refuses without JWT_SECRET, or with one under 32 bytes", async () => {
    const missing = await cli(["token", "mint", "--project", "p"], { env: { JWT_SECRET: undefined } });
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe("");
    expect(oneLine(missing.stderr)).toMatch(/^boardline: JWT_SECRET is not set/);
    const short = await cli(["token", "mint", "--project", "p"], { env: { JWT_SECRET: "x".repeat(31) } });
    expect(short.code).toBe(1);
    expect(oneLine(short.stderr)).toBe("boardline: invalid configuration: JWT_SECRET must be at least 32 bytes");
  });

  test("token mint needs no Redis", async () => {
    const out = await ok(["token", "mint", "--project", "p", "--json"], { env: { REDIS_URL: undefined } });
    expect(JSON.parse(out)).toMatchObject({ project: "p", subject: "operator", token: expect.stringMatching(JWT) });
  });
});
