// `npm run generate` (after buf generate): rewrites the configuration table in
// docs/configuration.md (or the file named as the first argument) from src/config/variables.ts.
// Runs compiled, as dist/tools/generate-config-table.js.

import { readFileSync, writeFileSync } from "node:fs";
import { renderConfigTable, replaceConfigTable } from "./config-table.js";

const path = process.argv[2] ?? "docs/configuration.md";
const before = readFileSync(path, "utf8");
const after = replaceConfigTable(before, renderConfigTable());
if (after === before) {
  process.stdout.write(`${path}: configuration table up to date\n`);
} else {
  writeFileSync(path, after);
  process.stdout.write(`${path}: configuration table rewritten\n`);
}
