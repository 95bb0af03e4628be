// Renders the configuration table of docs/configuration.md from the rows in
// src/config/variables.ts, and puts it between the table's marker comments.
// `npm run generate` rewrites docs/configuration.md with it;
// test/config/config-table.test.ts fails when that table is stale.

import { VARIABLES, type Variable } from "../src/config/variables.js";
import { cell, code } from "./markdown.js";

export const TABLE_START =
  "<!-- configuration table: generated from src/config/variables.ts by `npm run generate`; edit the rows there -->";
export const TABLE_END = "<!-- end of configuration table -->";

function defaultColumn(row: Variable): string {
  if (row.defaultNote !== undefined) return row.defaultNote;
  const value = "default" in row ? row.default : undefined;
  return value === undefined ? "—" : code(String(value));
}

function allowedColumn(row: Variable): string {
  switch (row.kind) {
    case "integer":
      return `${code(String(row.min))}–${code(String(row.max))}`;
    case "choice":
      return row.values.map(code).join(", ");
    case "hosts":
      return `${code("host[:port]")}, comma-separated; IPv6 in brackets (${code("[::1]:7000")}); port ${code(String(row.defaultPort))} when left out`;
    case "http-url":
      return row.allowed ?? `an ${code("http://")} or ${code("https://")} URL`;
    case "list":
    case "file":
    case "text":
      return row.allowed;
  }
}

/** The meaning, and for a secret row that it may come from a file (read-variable.ts). */
function meaningColumn(name: string, row: Variable): string {
  if (row.secret !== true) return row.meaning;
  return `${row.meaning}. Or ${code(`${name}_FILE`)}: the path of a file holding it ([secrets in files](#secrets-in-files))`;
}

/** The Markdown table, one row per variable, in the order of the rows. */
export function renderConfigTable(rows: Readonly<Record<string, Variable>> = VARIABLES): string {
  const lines = ["| variable | default | allowed values | meaning |", "|---|---|---|---|"];
  for (const [name, row] of Object.entries(rows)) {
    const cells = [code(name), defaultColumn(row), allowedColumn(row), meaningColumn(name, row)].map(cell);
    lines.push(`| ${cells.join(" | ")} |`);
  }
  return lines.join("\n");
}

/** `doc` with the text between the markers replaced by `table`. */
export function replaceConfigTable(doc: string, table: string): string {
  const start = doc.indexOf(TABLE_START);
  const end = doc.indexOf(TABLE_END);
  if (start === -1 || end === -1 || end < start) {
    throw new Error(`the document lacks the configuration table markers: ${TABLE_START} … ${TABLE_END}`);
  }
  return `${doc.slice(0, start + TABLE_START.length)}\n${table}\n${doc.slice(end)}`;
}
