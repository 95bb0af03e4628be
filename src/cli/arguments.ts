/**
 * Argument checks shared by the commands. Their failures are usage errors:
 * reported like commander's own (`boardline: error: …`), exit code 2.
 */
import { type Command, InvalidArgumentError } from "commander";

/** The most mute events `mute show --events` prints. */
export const MAX_EVENTS = 10_000;
const MAX_TTL_SECONDS = 366 * 24 * 3600;

/** Thrown from our own checks; reported like commander's usage errors (exit 2). */
export function usage(command: Command, message: string): never {
  command.error(`error: ${message}`, { exitCode: 2, code: "boardline.usage" });
}

/** A usage error when an id check found a problem. */
export function checkId(command: Command, problem: string | undefined): void {
  if (problem !== undefined) usage(command, problem);
}

/** `--events <n>`: a whole number from 1 to MAX_EVENTS. */
export function parseEvents(raw: string): number {
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > MAX_EVENTS) {
    throw new InvalidArgumentError(`expected a whole number from 1 to ${MAX_EVENTS}.`);
  }
  return Number(raw);
}

/** `90`, `90s`, `15m`, `1h`, `7d` → seconds. */
export function parseDuration(raw: string): number {
  const m = /^(\d+)([smhd]?)$/.exec(raw.trim());
  const unit = { "": 1, s: 1, m: 60, h: 3600, d: 86_400 }[m?.[2] ?? ""] ?? 1;
  const seconds = m === null ? Number.NaN : Number(m[1]) * unit;
  if (!(seconds >= 1 && seconds <= MAX_TTL_SECONDS)) {
    throw new InvalidArgumentError("expected a duration like 90s, 15m, 1h or 7d (at least 1s, at most 366d).");
  }
  return seconds;
}
