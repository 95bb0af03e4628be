/**
 * The operator's SCAN passes (`channel reindex`, `whiteboard reseal`): run a
 * bounded number of SCAN steps at a time, and after each batch tell stderr
 * how far it got and the cursor to resume from with `--from`, so a pass
 * stopped half-way over a large keyspace is never started over.
 */
import { type Command, InvalidArgumentError } from "commander";
import type { ReindexOptions } from "../services/ports.js";
import { jsonOption } from "./terminal.js";

/** SCAN steps between two progress lines. */
const STEPS_PER_REPORT = 50;

export interface PassOptions {
  readonly batch: number;
  readonly pauseMs: number;
  readonly from?: string;
}

/** Runs `step` from `o.from` to the end; `onStep` adds up one batch and answers the progress line's text. */
export async function resumablePass<S extends { readonly cursor: string }>(
  o: PassOptions,
  step: (options: ReindexOptions) => Promise<S>,
  onStep: (batch: S) => string,
): Promise<void> {
  let cursor = o.from ?? "0";
  do {
    const batch = await step({ batch: o.batch, pauseMs: o.pauseMs, from: cursor, maxSteps: STEPS_PER_REPORT });
    const progress = onStep(batch);
    cursor = batch.cursor;
    if (cursor !== "0") process.stderr.write(`boardline: ${progress}; resume with --from ${cursor}\n`);
  } while (cursor !== "0");
}

/** The options every pass takes: `--batch`, `--pause-ms`, `--from` and `--json`. */
export function passOptions(command: Command): Command {
  return command
    .option("--batch <n>", "keys per SCAN step", wholeNumber(1, 100_000), 500)
    .option("--pause-ms <n>", "pause between steps, so a serving Redis is not hogged", wholeNumber(0, 60_000), 10)
    .option("--from <cursor>", "resume from the cursor a stopped pass printed")
    .addOption(jsonOption());
}

/** A commander parser of a whole number in [min, max]. */
export function wholeNumber(min: number, max: number): (raw: string) => number {
  return (raw) => {
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      throw new InvalidArgumentError(`expected a whole number from ${min} to ${max}.`);
    }
    return Number(raw);
  };
}
