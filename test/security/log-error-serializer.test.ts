/**
 * The logger's error serializer (src/log.ts): a Redis command shows as its
 * name, wherever in a logged error it hangs, and the error itself stays as
 * ioredis made it (the code that caught it classifies it afterwards); the
 * redaction paths still apply beside it.
 */
import { ReplyError } from "ioredis";
import { expect, test } from "vitest";
import { serializeError } from "../../src/log.js";
import { Failure } from "../../src/services/failure.js";
import { capturingLogger } from "../harness/capturing-logger.js";

const KEY = `bl:pass:{${"ab".repeat(32)}}`;

/** A reply error as ioredis hands it over: the failed command, arguments and all, on it. */
function replyError(message: string, name: string, args: unknown[]): Error {
  const e = new ReplyError(message) as Error & { command?: unknown };
  e.command = { name, args };
  return e;
}

/** The only line `log` wrote, parsed. */
function onlyLine(log: ReturnType<typeof capturingLogger>): Record<string, unknown> {
  const lines = log.lines();
  expect(lines).toHaveLength(1);
  return lines[0] ?? {};
}

test("a reply error is logged with its command's name, type, message and code, and is left as it was", () => {
  const e = replyError("OOM command not allowed", "evalsha", ["0123abcd", "1", KEY, "secret value"]);
  Object.assign(e, { code: "OOM" });
  const command = (e as { command?: unknown }).command;
  const log = capturingLogger();
  log.logger.error({ err: e, operation: "mute" }, "Redis rejected a command");

  const err = onlyLine(log).err as Record<string, unknown>;
  expect(err).toMatchObject({
    type: "ReplyError",
    message: "OOM command not allowed",
    code: "OOM",
    command: "evalsha",
  });
  expect(log.text()).not.toContain(KEY);
  expect(log.text()).not.toContain("secret value");
  expect(log.text()).not.toContain('"args"');
  // The error flows on to the code that classifies it: the same command object, its arguments whole.
  expect((e as { command?: unknown }).command).toBe(command);
  expect(command).toEqual({ name: "evalsha", args: ["0123abcd", "1", KEY, "secret value"] });
  expect(Object.getOwnPropertySymbols(e)).toEqual([]);
});

test("an aborted transaction's previous errors show their commands' names only, and stay as they were", () => {
  const previous = [replyError("OOM command not allowed", "get", [KEY]), replyError("OOM", "pttl", [KEY])];
  const exec = replyError("EXECABORT Transaction discarded because of previous errors.", "exec", []);
  Object.assign(exec, { previousErrors: previous });
  const log = capturingLogger();
  log.logger.error({ err: exec }, "Redis rejected a command");

  const err = onlyLine(log).err as Record<string, unknown>;
  expect(err.command).toBe("exec");
  expect(err.previousErrors).toMatchObject([
    { type: "ReplyError", message: "OOM command not allowed", command: "get" },
    { type: "ReplyError", message: "OOM", command: "pttl" },
  ]);
  expect(log.text()).not.toContain(KEY);
  expect((exec as { previousErrors?: unknown }).previousErrors).toBe(previous);
  expect((previous[0] as { command?: unknown }).command).toEqual({ name: "get", args: [KEY] });
});

test("a Redis error deeper in a logged error, or logged as the error argument, shows no arguments either", () => {
  const lastNodeError = replyError("CLUSTERDOWN The cluster is down", "hgetall", [KEY]);
  const allFailed = Object.assign(new Error("Failed to refresh slots cache."), { lastNodeError });
  const wrapped = new Failure("unavailable", { cause: replyError("READONLY replica", "hset", [KEY, "f", "v"]) });
  const log = capturingLogger();
  log.logger.warn({ err: allFailed }, "one");
  log.logger.error({ err: wrapped }, "two");
  log.logger.error(replyError("NOPERM no permission", "hgetall", [KEY]), "three");
  log.logger.info({ err: { command: { name: "incr", args: [KEY] } } }, "four");

  const [one, two, three, four] = log.lines() as Record<string, Record<string, unknown>>[];
  expect(one?.err?.lastNodeError).toMatchObject({ message: "CLUSTERDOWN The cluster is down", command: "hgetall" });
  expect(two?.err).toMatchObject({ type: "Failure", kind: "unavailable" });
  expect(String(two?.err?.message)).toContain("READONLY replica");
  expect(three?.err).toMatchObject({ message: "NOPERM no permission", command: "hgetall" });
  expect(four?.err).toEqual({ command: "incr" });
  expect(log.text()).not.toContain(KEY);
  expect((lastNodeError as { command?: unknown }).command).toEqual({ name: "hgetall", args: [KEY] });
});

test("values that are no error pass through, and a cycle does not hang", () => {
  expect(serializeError("plain text")).toBe("plain text");
  expect(serializeError(undefined)).toBeUndefined();
  const cyclic: Record<string, unknown> = { name: "loop" };
  cyclic.self = cyclic;
  const e = Object.assign(new Error("cyclic"), { details: cyclic });
  expect(JSON.stringify(serializeError(e))).toContain('"name":"loop"');
  expect(cyclic.self).toBe(cyclic);
});

test("the redaction paths still apply beside a logged error", () => {
  const log = capturingLogger();
  log.logger.info(
    {
      err: replyError("OOM", "hset", [KEY]),
      passphrase: "hunter2 passphrase",
      headers: { authorization: "Bearer abc.def.ghi" },
      body: { token: "tok-123", secret: "s3cr3t", sdkToken: "sdk-tok" },
    },
    "with secrets",
  );
  const line = onlyLine(log);
  expect(line.passphrase).toBe("[redacted]");
  expect(line.headers).toEqual({ authorization: "[redacted]" });
  expect(line.body).toEqual({ token: "[redacted]", secret: "[redacted]", sdkToken: "[redacted]" });
  expect((line.err as Record<string, unknown>).command).toBe("hset");
  for (const secret of ["hunter2", "abc.def.ghi", "tok-123", "s3cr3t", "sdk-tok", KEY]) {
    expect(log.text()).not.toContain(secret);
  }
});
