#!/usr/bin/env node
/**
 * The operator CLI (`npx boardline …`; docs/operations.md, "Operator CLI"):
 * manages channels and whiteboard settings through the same domain functions
 * as the API, reads records through the same store the server uses, and
 * mints test tokens. This is its entry: it runs the command line and maps
 * the outcome to the exit code: 0 success, 1 failure (one line on stderr),
 * 2 usage error.
 */
import { CommanderError } from "commander";
import { describeFailure } from "./cli-failure.js";
import { buildProgram } from "./program.js";

/** Runs the CLI; resolves to the exit code. */
async function run(argv: readonly string[]): Promise<number> {
  try {
    await buildProgram().parseAsync([...argv]);
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) {
      // --help, --version and `help` exit 0; a bare `boardline` or `boardline channel` prints help and is a usage error.
      return e.exitCode === 0 ? 0 : 2;
    }
    process.stderr.write(`boardline: ${describeFailure(e)}\n`);
    return 1;
  }
}

void run(process.argv).then((code) => {
  process.exitCode = code;
  if (code !== 0) {
    // After a failure the Redis client may still be winding down a connection
    // attempt (ioredis keeps timers of a refused connection): exit once stderr is out.
    process.stderr.write("", () => process.exit(code));
    return;
  }
  // Everything was closed; should a stray handle remain, do not hang the operator's shell.
  setTimeout(() => process.exit(code), 2000).unref();
});
