/**
 * The CLI's terminal: what commands print on stdout (one line of JSON with
 * `--json`, otherwise plain text for a person: aligned tables, ISO times), and
 * secrets piped on stdin (`--secret-key-stdin`, `--sdk-token-stdin`), so they
 * stay out of shell history.
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

/** All of stdin, without the trailing newline. */
export async function readStdin(what: string): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write(`boardline: reading the ${what} from stdin (end with Ctrl-D)\n`);
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks)
    .toString("utf8")
    .replace(/\r?\n$/, "");
}
