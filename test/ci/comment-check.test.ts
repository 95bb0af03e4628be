// .ci/comment-check.mjs: a comment that narrates (a bench figure, an issue number, a date) fails the
// check, naming file and line; a comment that explains, or states a limit next to its constant, passes.
// And src/ itself passes, as CI requires.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../..", import.meta.url));
const dirs: string[] = [];

function check(files: Record<string, string>): { status: number | null; out: string } {
  const dir = mkdtempSync(join(tmpdir(), "comment-check-"));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const r = spawnSync(process.execPath, [join(root, ".ci/comment-check.mjs"), dir], { cwd: root, encoding: "utf8" });
  return { status: r.status, out: r.stdout + r.stderr };
}

afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const GOOD = [
  "/**",
  " * Holds the socket corked until the end of the loop turn, so the commands of one turn go out in",
  " * one write: fewer system calls on both sides (docs/performance.md).",
  " */",
  "export const corked = true;",
  "/** How long a finished stream may wait for a reader; a limit, stated next to its constant. */",
  "export const UNTAKEN_ANSWER_MS = 10_000; // 10 s",
  "/** Pause between steps; default 10 ms. */",
  "export const pauseMs = 10;",
  'export const text = "// 57 µs on the bench (bench/RESULTS.md), issue 24"; // strings are not comments',
  "",
].join("\n");

describe(".ci/comment-check.mjs", () => {
  it("passes comments that explain, and limits and defaults stated with their constant", () => {
    const r = check({ "good.ts": GOOD });
    expect(r.out).toContain("0 comments that narrate");
    expect(r.status).toBe(0);
  });

  it("fails a comment citing a bench figure, an issue or a date, naming its file and line", () => {
    const bad = [
      "export const a = 1;",
      "/**",
      " * Coalescing saves Redis CPU (measured on the bench: 57 µs per mute, 22 µs with it;",
      " * bench/RESULTS.md, issue 24 part 1).",
      " */",
      "export function coalesce(): void {}",
      "// Turned on 2026-11-25 after the third run; about 600 bytes of heap per watch.",
      "export const on = true;",
      "",
    ].join("\n");
    const r = check({ "good.ts": GOOD, "bad.ts": bad });
    expect(r.status).toBe(1);
    expect(r.out).toMatch(/bad\.ts:3: .*cites a measurement/);
    expect(r.out).toMatch(/bad\.ts:3: .*gives a figure that is not a limit or default/);
    expect(r.out).toMatch(/bad\.ts:4: .*cites bench results.*cites an issue/);
    expect(r.out).toMatch(/bad\.ts:7: .*carries a date.*narrates sessions or rounds.*gives a figure/);
    expect(r.out).not.toContain("good.ts:");
  });

  it("fails a multiplier and a #-reference", () => {
    const r = check({ "bad.ts": "// 2–3× the throughput of the adapter (see #24).\nexport const x = true;\n" });
    expect(r.status).toBe(1);
    expect(r.out).toMatch(/bad\.ts:1: .*states a multiplier.*cites an issue/);
  });

  it("passes on src/", () => {
    const r = spawnSync(process.execPath, [join(root, ".ci/comment-check.mjs")], { cwd: root, encoding: "utf8" });
    expect(r.stdout).toMatch(/^src: \d+ files, 0 comments that narrate$/m);
    expect(r.status).toBe(0);
  }, 60_000);
});
