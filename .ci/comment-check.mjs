// Comments in src/ explain the code; they don't narrate how it came to be. A figure someone measured
// belongs in docs/performance.md (which the bench regenerates), history belongs in git, and both go
// stale in a comment while the code beside them stays right. This check fails (exit 1, one
// "file:line: what" per finding) when a comment
//   - cites the bench: "on the bench", "bench run", "bench results", "the bench showed", RESULTS(.md),
//     "run of record", "measured" (saying what the bench does with the code is fine);
//   - states a multiplier such as 0.8× or 1.5x;
//   - carries a date (2026-11-27, 2026-11) or a clock time (16:22 UTC), or names a commit (commit 1a2b3c4);
//   - cites an issue ("issue 12", "#12");
//   - narrates sessions or rounds ("session 3", "the third round", "an earlier run", "as it was before");
//   - gives a figure with a unit of size or time (KB, MB, GB, bytes, ms, µs, ns) or a percentage,
//     unless it states a limit or default: the comment says so ("default", "limit", "at most", "at
//     least", "up to", "cap"), or the code it documents (the next code line, or the same line for a
//     comment that ends one) holds a number literal.
// Heuristics, on purpose: a false finding is fixed by rewording the comment, never by an allow-list.
// Usage: node .ci/comment-check.mjs [folder…] (default: src). Reads .ts, .mts, .js and .mjs files.
import fs from "node:fs";
import path from "node:path";
import ts from "typescript";

const ORDINAL = String.raw`(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|\w+teenth|\w+tieth|\d+(?:st|nd|rd|th)|earlier|previous|latest)`;
/** Always a finding, whatever the code around the comment says. */
const NARRATION = [
  [/\b(?:on|in|per) the bench\b|\bbench(?:mark)?\s+(?:runs?|results?|figures?|numbers?|cells?|showed|shows|found)\b/i, "cites the bench"],
  [/\bRESULTS(?:\.md)?\b/, "cites bench results"],
  [/\brun of record\b/i, "cites a bench run"],
  [/\bmeasured\b/i, "cites a measurement"],
  [/\d(?:\.\d+)?\s?×|\b\d+\.\d+x\b/, "states a multiplier"],
  [/\b(?:19|20)\d\d-(?:0[1-9]|1[0-2])(?:-\d\d)?\b/, "carries a date"],
  [/\b\d\d?:\d\d\s?UTC\b/, "carries a clock time"],
  [/\bcommit [0-9a-f]{7,40}\b/i, "names a commit"],
  [/\bissues?\s+#?\d+/i, "cites an issue"],
  [/(?:^|[\s(])#\d+\b/, "cites an issue"],
  [/\b(?:session|round)\s+\d+\b/i, "narrates sessions or rounds"],
  [new RegExp(String.raw`\b(?:the|an?|this|that)\s+${ORDINAL}\s+(?:session|round|run)\b`, "i"), "narrates sessions or rounds"],
  [/\bas it was before\b/i, "narrates history"],
];
const LIMIT_WORDS = /\b(?:defaults?|limit(?:s|ed)?|at most|at least|up to|cap(?:s|ped)?)\b/i;
/** A finding unless it states a limit or default (see the top of this file). */
const FIGURE = /(?<![\w.-])\d(?:[\d.,]|\s(?=\d{3}\b))*\s?(?:KB|KiB|kB|MB|MiB|GB|GiB|bytes?|ms|µs|us|ns|%)(?![\w/])/;

function sourceFiles(dir) {
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && /\.(?:m?ts|m?js)$/.test(e.name) && !e.name.endsWith(".d.ts"))
    .map((e) => path.join(e.parentPath, e.name))
    .sort();
}

/**
 * Every comment of a file, with the code it documents: the TypeScript parser finds the tokens, and the
 * trivia between two tokens (whitespace and comments only, never a string) is searched for comments.
 */
function comments(file, text) {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const starts = [];
  const visit = (node) => {
    if (node.kind >= ts.SyntaxKind.FirstJSDocNode && node.kind <= ts.SyntaxKind.LastJSDocNode) return;
    const children = node.getChildren(source);
    if (children.length === 0) starts.push([node.pos, node.getStart(source)]);
    for (const child of children) visit(child);
  };
  visit(source);
  const found = [];
  for (const [from, to] of starts) {
    for (const m of text.slice(from, to).matchAll(/\/\/[^\n]*|\/\*[\s\S]*?\*\//g)) {
      found.push({ start: from + m.index, text: m[0], codeAfter: to });
    }
  }
  return { source, found };
}

/** The code a comment documents: the rest of its line if code precedes it there, else the next code line. */
function documentedCode(text, comment) {
  const lineStart = text.lastIndexOf("\n", comment.start - 1) + 1;
  const before = text.slice(lineStart, comment.start);
  if (before.trim() !== "") return before;
  const end = text.indexOf("\n", comment.codeAfter);
  return text.slice(comment.codeAfter, end === -1 ? text.length : end);
}

function check(file) {
  const text = fs.readFileSync(file, "utf8");
  const { source, found } = comments(file, text);
  const findings = [];
  for (const comment of found) {
    const statesValue = LIMIT_WORDS.test(comment.text) || /\b\d[\d_.]*\b/.test(documentedCode(text, comment));
    const firstLine = source.getLineAndCharacterOfPosition(comment.start).line + 1;
    comment.text.split("\n").forEach((line, i) => {
      const why = [];
      for (const [pattern, what, excused] of NARRATION) {
        const m = pattern.exec(line);
        if (m && !excused?.(line, m.index)) why.push(what);
      }
      if (!statesValue && FIGURE.test(line)) why.push("gives a figure that is not a limit or default");
      if (why.length > 0) findings.push(`${file}:${firstLine + i}: ${[...new Set(why)].join(", ")}: ${line.trim()}`);
    });
  }
  return findings;
}

const dirs = process.argv.length > 2 ? process.argv.slice(2) : ["src"];
const files = dirs.flatMap(sourceFiles);
const findings = files.flatMap(check);
for (const f of findings) console.log(f);
console.log(`${dirs.join(", ")}: ${files.length} files, ${findings.length} comments that narrate`);
process.exit(findings.length === 0 ? 0 : 1);
