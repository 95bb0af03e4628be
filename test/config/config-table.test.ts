import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { VARIABLES } from "../../src/config/variables.js";
import { ROOT } from "../harness/build-dist.js";
import { renderConfigTable, replaceConfigTable, TABLE_END, TABLE_START } from "../../tools/config-table.js";

const DOC = readFileSync(join(ROOT, "docs/configuration.md"), "utf8");

describe("docs/configuration.md's table comes from src/config/variables.ts", () => {
  it("is up to date (else: npm run generate)", () => {
    expect(
      replaceConfigTable(DOC, renderConfigTable()),
      "docs/configuration.md's table is stale: run npm run generate",
    ).toBe(DOC);
  });

  it("has one row per variable, in the table's order", () => {
    const rows = renderConfigTable().split("\n").slice(2);
    expect(rows.map((row) => /^\| `(\w+)` \|/.exec(row)?.[1])).toEqual(Object.keys(VARIABLES));
    expect(rows.every((row) => row.split(" | ").length === 4)).toBe(true);
  });

  it("is rendered from the rows: default, range or allowed values, meaning", () => {
    const table = renderConfigTable({
      A_NUMBER: { kind: "integer", default: 5, min: 1, max: 9, meaning: "a | b" },
      A_WORD: { kind: "choice", default: "x", values: ["x", "y"], meaning: "pick" },
      NODES: { kind: "hosts", defaultPort: 7, meaning: "nodes" },
      BASE: { kind: "http-url", defaultNote: "depends", meaning: "base" },
      TOKEN: { kind: "text", secret: true, allowed: "32 bytes", meaning: "a token" },
    });
    expect(table.split("\n").slice(2)).toEqual([
      "| `A_NUMBER` | `5` | `1`–`9` | a \\| b |",
      "| `A_WORD` | `x` | `x`, `y` | pick |",
      "| `NODES` | — | `host[:port]`, comma-separated; IPv6 in brackets (`[::1]:7000`); port `7` when left out | nodes |",
      "| `BASE` | depends | an `http://` or `https://` URL | base |",
      "| `TOKEN` | — | 32 bytes | a token. Or `TOKEN_FILE`: the path of a file holding it ([secrets in files](#secrets-in-files)) |",
    ]);
  });

  it("replaces only the text between the markers, and needs both", () => {
    const doc = `intro\n${TABLE_START}\nold\n${TABLE_END}\noutro\n`;
    expect(replaceConfigTable(doc, "new")).toBe(`intro\n${TABLE_START}\nnew\n${TABLE_END}\noutro\n`);
    expect(() => replaceConfigTable("no markers", "new")).toThrow(/markers/);
  });
});
