/**
 * The documentation reads as a product's, not as a lab diary: README.md stays short (the rest is
 * in docs/), and neither the README, docs/*.md nor the names of bench/'s files cite issue numbers
 * or narrate the work ("run of record", "the third round", "the fifteenth session").
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../harness/build-dist.js";

const README_MAX_LINES = 300;

const ORDINAL =
  "(?:\\d+(?:st|nd|rd|th)|first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|last|previous|next|this|that|earlier|later)";

/** What a text must not say: an issue number, or the diary of the work that wrote it. */
const NARRATION: readonly (readonly [string, RegExp])[] = [
  ["an issue number", /\bissues?[ _-]?#?\d+/i],
  ["an issue number", /(?<![\w&/])#\d+\b/],
  ["the diary's 'run of record'", /\bruns?[ _-]of[ _-]record\b/i],
  ["a numbered round or session", new RegExp(`\\b${ORDINAL}[ _-](?:round|session)s?\\b`, "i")],
  ["a numbered session", /\bsessions?[ _-]?\d+\b/i],
];

/** The narration found in `text`, one line each: `<line>: <what> (<the words>)`. */
function narrationIn(text: string): string[] {
  const found: string[] = [];
  text.split("\n").forEach((line, index) => {
    for (const [what, pattern] of NARRATION) {
      const match = pattern.exec(line);
      if (match !== null) found.push(`${index + 1}: ${what} (${match[0]})`);
    }
  });
  return found;
}

/** Every path under bench/, relative to it. */
function benchPaths(): string[] {
  const bench = join(ROOT, "bench");
  if (!existsSync(bench)) return [];
  return readdirSync(bench, { recursive: true, encoding: "utf8" }).filter((path) => !path.includes("node_modules"));
}

function documents(): string[] {
  const docs = readdirSync(join(ROOT, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => `docs/${name}`);
  return ["README.md", ...docs];
}

describe("the documentation does not narrate", () => {
  it(`README.md has at most ${README_MAX_LINES} lines (the rest belongs in docs/)`, () => {
    const lines = readFileSync(join(ROOT, "README.md"), "utf8").trimEnd().split("\n").length;
    expect(lines).toBeLessThanOrEqual(README_MAX_LINES);
  });

  it.each(documents())("%s cites no issue number and keeps no diary", (path) => {
    expect(narrationIn(readFileSync(join(ROOT, path), "utf8"))).toEqual([]);
  });

  it("bench/'s file names say what they measure, not which issue or round they came from", () => {
    expect(benchPaths().length).toBeGreaterThan(0);
    expect(benchPaths().flatMap((path) => narrationIn(path).map((found) => `${path}: ${found}`))).toEqual([]);
  });
});

describe("the narration check", () => {
  it("finds issue numbers, the run of record, numbered rounds and sessions", () => {
    const text = [
      "as issue 24 part 2 showed",
      "see #37",
      "the run of record",
      "in the third round",
      "the fifteenth session's runs",
      "notes of session 12",
      "bench/issue24-fanout.mjs",
    ].join("\n");
    expect(narrationIn(text).map((found) => found.split(":")[0])).toEqual(["1", "2", "3", "4", "5", "6", "7"]);
  });

  it("lets ordinary words through: HTTP/2 sessions, links to an issue tracker, headings, colours", () => {
    const text = [
      "an HTTP/2 session gets GOAWAY; X-Session-Id is allowed",
      "a round trip; each round of reads; round 1 and round 2 of a cell; going round 100 channels",
      "[a bug](https://github.com/haproxy/haproxy/issues/3447)",
      "# 200 {} and the docs' #fragment; per round 20 tasks",
      "&#8212; a character reference",
    ].join("\n");
    expect(narrationIn(text)).toEqual([]);
  });
});
