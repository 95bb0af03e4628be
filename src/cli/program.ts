/**
 * The `boardline` command line: the root command (version, help, how errors
 * are printed) with every command group attached.
 */
import { readFileSync } from "node:fs";
import { Command } from "commander";
import { addChannelCommands } from "./channel-commands.js";
import { addConversionCommands } from "./conversion-commands.js";
import { addMuteCommands } from "./mute-commands.js";
import { addTokenCommands } from "./token-commands.js";
import { addWhiteboardCommands } from "./whiteboard-commands.js";

/** The program; it throws (exitOverride) instead of exiting, so the caller picks the exit code. */
export function buildProgram(): Command {
  const program = new Command("boardline")
    .description(
      "boardline operator CLI: manages channels and whiteboard settings (through the same functions as the API),\n" +
        "reads mute state and conversion records, and mints test tokens.",
    )
    .version(version(), "-V, --version", "print the version")
    .exitOverride()
    .configureOutput({ outputError: (str, write) => write(`boardline: ${str.trimEnd()} (see --help)\n`) })
    .addHelpText(
      "after",
      "\nEnvironment (the same variables as the server):\n" +
        "  REDIS_URL              redis://[user:password@]host[:port][/db] or rediss:// (TLS)\n" +
        "  REDIS_CLUSTER_NODES    host:port,… of a Redis Cluster (credentials and TLS from REDIS_URL)\n" +
        "  REDIS_SENTINELS        host:port,… of Redis Sentinels, with REDIS_SENTINEL_NAME\n" +
        "  REDIS_KEY_PREFIX       key prefix (default bl:)\n" +
        "  CHANNEL_DEFAULT_TTL_HOURS   lifetime of a channel created without --expire-time (unset: none)\n" +
        "  JWT_SECRET             HS256 secret for token mint (at least 32 bytes)\n" +
        "  JWT_PROJECT_CLAIM, JWT_ISSUER, JWT_AUDIENCE, JWT_TYPES   what token mint sets, as the server checks it\n" +
        "There is no in-memory mode: every command but token mint needs Redis.\n" +
        "\nExit codes: 0 success, 1 failure (one line on stderr), 2 usage error.",
    );
  addChannelCommands(program);
  addWhiteboardCommands(program);
  addTokenCommands(program);
  addMuteCommands(program);
  addConversionCommands(program);
  return program;
}

/** The package version (this file runs as dist/src/cli/program.js, three levels below package.json). */
function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as {
      version?: unknown;
    };
    return typeof pkg.version === "string" ? pkg.version : "unknown";
  } catch {
    return "unknown";
  }
}
