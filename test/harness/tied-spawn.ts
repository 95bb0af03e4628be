/**
 * `spawn` for the processes a test starts (redis-servers, boardline, CLIs):
 * each dies with the vitest worker that started it, even when that worker is
 * killed outright and runs no exit handler. On Linux, util-linux's `setpriv
 * --pdeathsig SIGKILL` sets the child's parent-death signal and then execs the
 * command, so the pid is the command's own; elsewhere it is a plain spawn.
 */
import { type ChildProcess, type SpawnOptions, spawn } from "node:child_process";
import { existsSync } from "node:fs";

const SETPRIV = "/usr/bin/setpriv";
const tie = process.platform === "linux" && existsSync(SETPRIV);

/** `spawn`, with its overloads (so piped stdio stays non-null in the types). */
export const spawnTied = ((command: string, args: readonly string[], options: SpawnOptions): ChildProcess =>
  tie
    ? spawn(SETPRIV, ["--pdeathsig", "SIGKILL", "--", command, ...args], options)
    : spawn(command, args, options)) as typeof spawn;
