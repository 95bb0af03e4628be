import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_KEY_PREFIX, hashPassphrase, keySchema } from "../../src/store/schema/keys.js";
import { REDIS_SCHEMA_DOC, renderKeyTable, renderRedisSchemaDoc } from "../../tools/redis-schema-doc.js";
import { hashShown, KEYS } from "../../tools/redis-schema-keys.js";
import { describedFields } from "../../tools/redis-schema-records.js";
import { ROOT } from "../harness/build-dist.js";

describe("docs/redis-schema.md comes from the key builders (src/store/schema/keys.ts)", () => {
  it("is up to date (else: npm run generate)", () => {
    const committed = readFileSync(join(ROOT, REDIS_SCHEMA_DOC), "utf8");
    expect(committed, `${REDIS_SCHEMA_DOC} is stale: run npm run generate`).toBe(renderRedisSchemaDoc());
  });

  it("lists every key the builders make, under the default prefix", () => {
    const rows = renderKeyTable().split("\n").slice(2);
    expect(rows).toHaveLength(Object.keys(KEYS).length);
    expect(rows.every((row) => row.startsWith(`| \`${DEFAULT_KEY_PREFIX}`))).toBe(true);
    expect(rows.map((row) => /^\| `([^`]+)` \|/.exec(row)?.[1])).toContain(
      keySchema().channelRecord("<project>", "<channel>"),
    );
  });

  it("shows a hashed part by what it hashes, and fails when the builder no longer hashes it", () => {
    const key = keySchema().guesses("x");
    expect(key).toContain(hashPassphrase("x"));
    expect(hashShown(key, "x", "<sha of x>")).toBe(`${DEFAULT_KEY_PREFIX}guesses:{<sha of x>}`);
    expect(() => hashShown(`${DEFAULT_KEY_PREFIX}guesses:{x}`, "x", "<sha of x>")).toThrow(/sha256 hex of x/);
  });

  it("fails when a record writer writes a field the layout does not explain, or the other way round", () => {
    const layout = { fields: () => ["a", "b"], meanings: { a: "A", c: "C" } };
    expect(() => describedFields("k", layout)).toThrow(/explained: \[b\].*written: \[c\]/);
    expect(describedFields("k", { fields: () => ["b", "a"], meanings: { a: "A", b: "B" } })).toEqual([
      ["a", "A"],
      ["b", "B"],
    ]);
  });
});
