import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { table, transportTable } from "../../src/server/call/error-table.js";
import { ERRORS_DOC, grpcName, renderErrorsDoc, renderErrorTable } from "../../tools/errors-doc.js";
import { ROOT } from "../harness/build-dist.js";

describe("docs/errors.md comes from the error table (src/server/call/error-table.ts)", () => {
  it("is up to date (else: npm run generate)", () => {
    const committed = readFileSync(join(ROOT, ERRORS_DOC), "utf8");
    expect(committed, `${ERRORS_DOC} is stale: run npm run generate`).toBe(renderErrorsDoc());
  });

  it("has one row per kind, domain rows first, each with what a caller does", () => {
    const rows = renderErrorTable().split("\n").slice(2);
    expect(rows.map((row) => /^\| `(\w+)` \|/.exec(row)?.[1])).toEqual([
      ...Object.keys(table),
      ...Object.keys(transportTable),
    ]);
    // Eight columns, the last one (what a caller does) never empty.
    for (const row of rows) {
      const cells = row.split(/(?<!\\)\|/).slice(1, -1);
      expect(cells, row).toHaveLength(8);
      expect(cells[7]?.trim(), row).not.toBe("");
    }
  });

  it("names gRPC codes as the gRPC spec spells them", () => {
    expect(grpcName(table.invalid.grpc)).toBe("INVALID_ARGUMENT");
    expect(grpcName(table.rate_limited.grpc)).toBe("RESOURCE_EXHAUSTED");
    expect(grpcName(table.internal.grpc)).toBe("INTERNAL");
  });
});
