/**
 * The CLI's failures and how each reads as the one line on stderr (exit code 1).
 */
import { ConfigError } from "../config/index.js";
import { isFailure } from "../services/failure.js";

/** A failure to report as one line on stderr, exit code 1. */
export class CliFailure extends Error {}

/** Runs a configuration loader; an invalid variable becomes a CliFailure naming it. */
export function configOrFail<T>(load: () => T): T {
  try {
    return load();
  } catch (e) {
    if (e instanceof ConfigError) throw new CliFailure(`invalid configuration: ${e.message}`);
    throw e;
  }
}

/** The message of an error's cause (or of the error itself when it has none). */
export function causeMessage(e: unknown): string | undefined {
  const cause = e instanceof Error ? (e.cause ?? e) : e;
  return cause instanceof Error && cause.message !== "" ? cause.message : undefined;
}

/** The line to print for a failed command (without the `boardline: ` prefix). */
export function describeFailure(e: unknown): string {
  if (e instanceof CliFailure) return e.message;
  if (isFailure(e)) return e.detail ?? `${e.kind}${causeMessage(e) === undefined ? "" : `: ${causeMessage(e)}`}`;
  return (e instanceof Error ? e.message : String(e)).split("\n")[0] ?? "failed";
}
