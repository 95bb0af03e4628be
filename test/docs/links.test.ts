/**
 * Every relative link of the documentation resolves: README.md, docs/*.md, bench/README.md,
 * test/README.md, and the READMEs under deploy/ and examples/. A link names a file or folder
 * that exists, and a `#fragment` names a heading of its target, by GitHub's rules for heading
 * anchors. A documentation file that does not exist is not read; a link to one fails.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../harness/build-dist.js";

/** The README.md files under `folder`, at any depth. */
function readmesUnder(folder: string): string[] {
  if (!existsSync(folder)) return [];
  return readdirSync(folder, { recursive: true, encoding: "utf8" })
    .filter((path) => path.split("/").at(-1) === "README.md" && !path.includes("node_modules"))
    .map((path) => join(folder, path));
}

/** The documentation files whose links are checked, those that exist. */
function documentationFiles(): string[] {
  const docs = join(ROOT, "docs");
  return [
    join(ROOT, "README.md"),
    ...(existsSync(docs) ? readdirSync(docs).filter((name) => name.endsWith(".md")) : []).map((name) =>
      join(docs, name),
    ),
    join(ROOT, "bench/README.md"),
    join(ROOT, "test/README.md"),
    ...readmesUnder(join(ROOT, "deploy")),
    ...readmesUnder(join(ROOT, "examples")),
  ].filter((path) => existsSync(path));
}

/** The Markdown outside fenced code blocks, line by line (fenced lines become empty). */
function proseLines(markdown: string): string[] {
  let fence: string | undefined;
  return markdown.split("\n").map((line) => {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker !== undefined && (fence === undefined || marker.startsWith(fence))) {
      fence = fence === undefined ? marker : undefined;
      return "";
    }
    return fence === undefined ? line : "";
  });
}

/** The link targets of `markdown`: inline links and reference definitions, outside code. */
function linkTargets(markdown: string): string[] {
  // Code spans never hold links; a link's text may hold a code span, which stays a link.
  const prose = proseLines(markdown)
    .join("\n")
    .replace(/`[^`\n]*`/g, "code");
  const inline = [...prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1] ?? "");
  const references = [...prose.matchAll(/^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1] ?? "");
  return [...inline, ...references];
}

/** GitHub's anchor of a heading's text: lowercase, punctuation but `-` and `_` dropped, spaces → `-`. */
function headingSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // a link's text
    .replace(/<[^>]+>/g, "") // inline HTML
    .replace(/`/g, "")
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "").replace(/ /g, "-");
}

/** The anchors of a Markdown file's headings; a repeated one gets `-1`, `-2`, … */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseLines(markdown)) {
    const heading = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const slug = headingSlug(heading);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

/** What is wrong with the relative links of the file at `path` (one line each; empty: nothing). */
function brokenLinks(path: string, markdown: string): string[] {
  const problems: string[] = [];
  for (const target of linkTargets(markdown)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, …
    const [file = "", fragment] = target.split("#", 2);
    if (file === "") {
      if (!headingAnchors(markdown).has(decodeURIComponent(fragment ?? ""))) {
        problems.push(`${target}: no heading with the anchor ${target}`);
      }
      continue;
    }
    const resolved = join(dirname(path), decodeURI(file));
    if (!existsSync(resolved)) {
      problems.push(`${target}: no such file`);
      continue;
    }
    if (fragment === undefined) continue;
    if (statSync(resolved).isDirectory() || !resolved.endsWith(".md")) {
      problems.push(`${target}: a fragment of something that is not a Markdown file`);
    } else if (!headingAnchors(readFileSync(resolved, "utf8")).has(decodeURIComponent(fragment))) {
      problems.push(`${target}: no heading with the anchor #${fragment}`);
    }
  }
  return problems;
}

describe("the documentation's relative links resolve", () => {
  const files = documentationFiles();

  it("reads the README and docs/", () => {
    expect(files).toContain(join(ROOT, "README.md"));
    expect(files.some((path) => path.startsWith(join(ROOT, "docs")))).toBe(true);
  });

  it.each(files.map((path) => [relative(ROOT, path), path]))("%s", (_name, path) => {
    expect(brokenLinks(path, readFileSync(path, "utf8"))).toEqual([]);
  });
});

describe("the link checker", () => {
  const here = join(ROOT, "docs", "example.md");

  it("finds a link to a missing file, and a fragment no heading has", () => {
    const markdown = [
      "# Title",
      "",
      "[gone](missing.md), [there](api.md#no-such-heading), [self](#title), [not](#nope)",
    ].join("\n");
    expect(brokenLinks(here, markdown)).toEqual([
      "missing.md: no such file",
      "api.md#no-such-heading: no heading with the anchor #no-such-heading",
      "#nope: no heading with the anchor #nope",
    ]);
  });

  it("reads links, not code: fenced blocks and code spans are skipped", () => {
    const markdown = ["[a](a.md) `[b](b.md)`", "```sh", "[c](c.md)", "```", "[`d`](d.md)", "[e]: e.md"].join("\n");
    expect(linkTargets(markdown)).toEqual(["a.md", "d.md", "e.md"]);
  });

  it("makes anchors as GitHub does", () => {
    expect(headingSlug("Replicated acknowledgement (`REDIS_MIN_REPLICAS`)")).toBe(
      "replicated-acknowledgement-redis_min_replicas",
    );
    expect(headingSlug("gRPC, Connect and gRPC-Web")).toBe("grpc-connect-and-grpc-web");
    expect(headingSlug("Drain (SIGTERM) — how")).toBe("drain-sigterm--how");
    expect([...headingAnchors("# Errors\n## Errors\n## Errors\n```\n# not a heading\n```")]).toEqual([
      "errors",
      "errors-1",
      "errors-2",
    ]);
  });
});
