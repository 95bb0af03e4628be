// Writes a generated file when its text changed, and says which happened.

import { readFileSync, writeFileSync } from "node:fs";

export function writeGenerated(path: string, text: string): void {
  let before: string | undefined;
  try {
    before = readFileSync(path, "utf8");
  } catch {
    before = undefined;
  }
  if (before === text) {
    process.stdout.write(`${path}: up to date\n`);
    return;
  }
  writeFileSync(path, text);
  process.stdout.write(`${path}: rewritten\n`);
}
