/**
 * deploy/jemalloc.sh, which `npm start` and the benchmarks' servers start node through: jemalloc (Debian's
 * libjemalloc2, which .ci/run installs where it is missing; redis-server links it too) is preloaded, as
 * the image's LD_PRELOAD does, unless LD_PRELOAD is set already. Read from the child's own memory map.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ROOT } from "../harness/build-dist.js";

/** What node, started through the script with `env`, says of itself: its LD_PRELOAD and whether jemalloc is mapped. */
function startedThrough(env: Record<string, string | undefined>): { preload: string | null; jemalloc: boolean } {
  const probe = `console.log(JSON.stringify({
    preload: process.env.LD_PRELOAD ?? null,
    jemalloc: /\\/libjemalloc\\.so\\.2$/m.test(require("node:fs").readFileSync("/proc/self/maps", "utf8")),
  }))`;
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  delete childEnv.LD_PRELOAD;
  for (const [k, v] of Object.entries(env)) if (v !== undefined) childEnv[k] = v;
  const out = execFileSync("bash", ["deploy/jemalloc.sh", process.execPath, "-e", probe], {
    cwd: ROOT,
    env: childEnv,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
  return JSON.parse(out) as { preload: string | null; jemalloc: boolean };
}

describe("deploy/jemalloc.sh", () => {
  it("preloads jemalloc when LD_PRELOAD is not set", () => {
    const probe = execFileSync("bash", ["-c", "LD_PRELOAD=libjemalloc.so.2 env true 2>&1"], { encoding: "utf8" });
    if (probe !== "") throw new Error("jemalloc is missing: apt-get install libjemalloc2 (Debian's package)");
    expect(startedThrough({})).toEqual({ preload: "libjemalloc.so.2", jemalloc: true });
  });

  it("keeps an empty LD_PRELOAD: glibc's malloc", () => {
    expect(startedThrough({ LD_PRELOAD: "" })).toEqual({ preload: "", jemalloc: false });
  });

  it("keeps an LD_PRELOAD that is set, without adding to it", () => {
    const libc = readFileSync("/proc/self/maps", "utf8").match(/\S*\/libc\.so\.6$/m)?.[0];
    expect(libc).toBeDefined();
    expect(startedThrough({ LD_PRELOAD: libc })).toEqual({ preload: libc, jemalloc: false });
  });

  it("is what `npm start` starts node through, with package.json's node flags", () => {
    const pkg = JSON.parse(readFileSync(`${ROOT}/package.json`, "utf8")) as { scripts: { start: string } };
    expect(pkg.scripts.start).toContain("bash deploy/jemalloc.sh node $npm_package_config_nodeFlags dist/src/main.js");
  });
});
