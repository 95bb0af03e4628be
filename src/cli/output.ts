/**
 * What commands print on stdout: one line of JSON with `--json`, otherwise
 * plain text for a person (aligned tables, ISO times).
 */
import { Option } from "commander";

/** The `--json` option every command that prints a result offers. */
export const jsonOption = () => new Option("--json", "print the result as one JSON object");

/** Prints `data` as one JSON line when `json`, else the plain `human` text. */
export function print(json: boolean, data: unknown, human: string): void {
  process.stdout.write(json ? `${JSON.stringify(data)}\n` : `${human}\n`);
}

/** Epoch milliseconds as an ISO time (anything else as it is). */
export function formatTime(ms: number): string {
  return Number.isFinite(ms) ? new Date(ms).toISOString() : String(ms);
}

/** Rows as indented lines with aligned columns (the last column is not padded). */
export function table(rows: string[][]): string[] {
  const widths = rows.reduce<number[]>((w, row) => row.map((cell, i) => Math.max(w[i] ?? 0, cell.length)), []);
  return rows.map(
    (row) => `  ${row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join("  ")}`,
  );
}
