import { type DescMessage, getOption, hasOption } from "@bufbuild/protobuf";
import { field as fieldRules } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ChannelAdminService } from "../../../gen/channel/v1/channel_admin_pb.js";
import { PstnService } from "../../../gen/channel/v1/pstn_pb.js";
import { WhiteboardService } from "../../../gen/whiteboard/v1/whiteboard_pb.js";
import { matchPattern, re2Match, SAME_AS_RE2 } from "../../../src/server/call/pattern-match.js";

/** Every `string.pattern` rule of `message` and the messages its fields hold. */
function patternsOf(message: DescMessage, seen = new Set<DescMessage>()): string[] {
  if (seen.has(message)) return [];
  seen.add(message);
  return message.fields.flatMap((f) => {
    const own: string[] = [];
    if (hasOption(f, fieldRules)) {
      const rules = getOption(f, fieldRules);
      const stringRules = rules.type.case === "string" ? rules.type.value : undefined;
      if (stringRules?.pattern !== undefined && stringRules.pattern !== "") own.push(stringRules.pattern);
    }
    const nested = f.message === undefined ? [] : patternsOf(f.message, seen);
    return [...own, ...nested];
  });
}

const servedPatterns = [PstnService, WhiteboardService, ChannelAdminService].flatMap((service) =>
  service.methods.flatMap((m) => patternsOf(m.input)),
);

/** Any UTF-16 code unit (lone surrogates included), control characters, and the characters the patterns name. */
const unit = fc.oneof(
  fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
  fc.integer({ min: 0, max: 0xa0 }).map((c) => String.fromCharCode(c)),
  fc.constantFrom("{", "}", "-", "_", "a", "Z", "9", "\n", "\u{1F600}", "\u{10FFFF}"),
);
const text = fc.array(unit, { maxLength: 140 }).map((units) => units.join(""));

describe("the validator's pattern matching", () => {
  it("knows every pattern of the served methods (a new one falls back to RE2: add it here when it is hot)", () => {
    expect(servedPatterns.length).toBeGreaterThan(0);
    expect(servedPatterns.filter((p) => !SAME_AS_RE2.has(p))).toEqual([]);
  });

  it.each([...SAME_AS_RE2.keys()])("answers as RE2 does for %s", (pattern) => {
    fc.assert(
      fc.property(text, (s) => matchPattern(pattern, s) === re2Match(pattern, s)),
      { numRuns: 5_000 },
    );
    const edges = [
      "",
      "a",
      "a\n",
      "\na",
      "a".repeat(128),
      "a".repeat(129),
      "\u0080",
      "\u009f",
      "\u00a0",
      "\ud800",
      "x{y",
    ];
    for (const s of edges) expect(matchPattern(pattern, s)).toBe(re2Match(pattern, s));
  });

  it("matches a pattern it does not know with RE2 (its syntax, not JavaScript's)", () => {
    expect(matchPattern("^\\Qa.b\\E$", "a.b")).toBe(true);
    expect(matchPattern("^\\Qa.b\\E$", "axb")).toBe(false);
    expect(() => matchPattern("(?<=a)b", "ab")).toThrow();
  });
});
