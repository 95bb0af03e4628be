/**
 * How the validator (call-steps.ts) matches the `string.pattern` rules of the contract: the patterns our
 * protos use, each as the JavaScript RegExp that accepts exactly the strings RE2 accepts for it, and
 * anything else with RE2 itself (@bufbuild/re2, the engine protovalidate uses by default, compiled once
 * per pattern as protovalidate does). The same answers, for less: RE2's matcher, written in JavaScript,
 * is much slower than V8's native RegExp, and every mute runs these patterns on its fields.
 *
 * A pattern belongs in SAME_AS_RE2 only when RE2 and the RegExp agree on every string:
 * test/server/call/pattern-match.test.ts holds each one to RE2 over arbitrary Unicode strings (lone
 * surrogates, control characters, astral characters) and names every pattern of the served methods that
 * is not in it. For the ones here: `^` and `$` without flags mean the start and end of the text in both;
 * the classes exclude only BMP characters, so reading astral characters as one code point (RE2) or two
 * surrogates (RegExp without `u`) gives the same answer, and the counted one admits ASCII only.
 */
import { RE2JS } from "@bufbuild/re2";

/** Our protos' patterns (proto/…, `string.pattern`), as RegExps RE2 agrees with. */
export const SAME_AS_RE2: ReadonlyMap<string, RegExp> = new Map([
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the pattern excludes control characters
  ["^[^\\x00-\\x1F\\x7F-\\x9F]+$", /^[^\x00-\x1F\x7F-\x9F]+$/],
  // biome-ignore lint/suspicious/noControlCharactersInRegex: the pattern excludes control characters
  ["^[^{}\\x00-\\x1F\\x7F]+$", /^[^{}\x00-\x1F\x7F]+$/],
  ["^[A-Za-z0-9_-]{1,128}$", /^[A-Za-z0-9_-]{1,128}$/],
  // A masked caller id: at most four digits, no control characters.
  [
    "^[^0-9\\x00-\\x1F\\x7F]*([0-9][^0-9\\x00-\\x1F\\x7F]*){0,4}$",
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the pattern excludes control characters
    /^[^0-9\x00-\x1F\x7F]*([0-9][^0-9\x00-\x1F\x7F]*){0,4}$/,
  ],
]);

/** Compiled RE2 patterns not in SAME_AS_RE2; cleared past a bound, as protovalidate bounds its own. */
const re2Cache = new Map<string, RE2JS>();
const RE2_CACHE_LIMIT = 1024;

/** RE2's answer for `pattern` on `against` (protovalidate's default matcher, re-made: it is not exported). */
export function re2Match(pattern: string, against: string): boolean {
  let re = re2Cache.get(pattern);
  if (re === undefined) {
    if (re2Cache.size >= RE2_CACHE_LIMIT) re2Cache.clear();
    re = RE2JS.compile(pattern);
    re2Cache.set(pattern, re);
  }
  return re.test(against);
}

/** The validator's `regexMatch`: RE2's answer, through a RegExp where one is known to give it. */
export function matchPattern(pattern: string, against: string): boolean {
  const same = SAME_AS_RE2.get(pattern);
  return same === undefined ? re2Match(pattern, against) : same.test(against);
}
