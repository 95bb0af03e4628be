/**
 * deploy/jemalloc.sh, which `npm start` and the benchmarks' servers start node through: jemalloc (Debian's
 * libjemalloc2, which `npm test` installs where it is missing; redis-server links it too) is preloaded, as
 * the image's LD_PRELOAD does, unless LD_PRELOAD is set already, with the image's MALLOC_CONF unless one is
 * set. Read from the child's own memory map and environment; jemalloc complains on stderr of a setting it
 * does not take.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ROOT } from "../harness/build-dist.js";

interface Started {
  preload: string | null;
  jemalloc: boolean;
  conf: string | null;
  stderr: string;
}

/** What node, started through the script with `env`, says of itself: its LD_PRELOAD, whether jemalloc is mapped, its MALLOC_CONF. */
function startedThrough(env: Record<string, string | undefined>): Started {
  const probe = `console.log(JSON.stringify({
    preload: process.env.LD_PRELOAD ?? null,
    jemalloc: /\\/libjemalloc\\.so\\.2$/m.test(require("node:fs").readFileSync("/proc/self/maps", "utf8")),
    conf: process.env.MALLOC_CONF ?? null,
  }))`;
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  delete childEnv.LD_PRELOAD;
  delete childEnv.MALLOC_CONF;
  for (const [k, v] of Object.entries(env)) if (v !== undefined) childEnv[k] = v;
  const child = spawnSync("bash", ["deploy/jemalloc.sh", process.execPath, "-e", probe], {
    cwd: ROOT,
    env: childEnv,
    encoding: "utf8",
  });
  return { ...(JSON.parse(child.stdout) as Omit<Started, "stderr">), stderr: child.stderr };
}

describe("deploy/jemalloc.sh", () => {
  it("preloads jemalloc when LD_PRELOAD is not set", () => {
    const probe = execFileSync("bash", ["-c", "LD_PRELOAD=libjemalloc.so.2 env true 2>&1"], { encoding: "utf8" });
    if (probe !== "") throw new Error("jemalloc is missing: apt-get install libjemalloc2 (Debian's package)");
    // jemalloc takes the setting: it says "<jemalloc>: Invalid conf pair" on stderr of one it does not
    expect(startedThrough({})).toEqual({
      preload: "libjemalloc.so.2",
      jemalloc: true,
      conf: "dirty_decay_ms:1000",
      stderr: "",
    });
    expect(startedThrough({ MALLOC_CONF: "dirty_decay_ms:nonsense" }).stderr).toContain("<jemalloc>");
  });

  it("keeps a MALLOC_CONF that is set, even empty", () => {
    expect(startedThrough({ MALLOC_CONF: "" })).toMatchObject({ jemalloc: true, conf: "" });
    expect(startedThrough({ MALLOC_CONF: "dirty_decay_ms:5000" })).toMatchObject({ conf: "dirty_decay_ms:5000" });
  });

  it("keeps an empty LD_PRELOAD: glibc's malloc", () => {
    expect(startedThrough({ LD_PRELOAD: "" })).toEqual({ preload: "", jemalloc: false, conf: null, stderr: "" });
  });

  it("keeps an LD_PRELOAD that is set, without adding to it", () => {
    const libc = readFileSync("/proc/self/maps", "utf8").match(/\S*\/libc\.so\.6$/m)?.[0];
    expect(libc).toBeDefined();
    expect(startedThrough({ LD_PRELOAD: libc })).toMatchObject({ preload: libc, jemalloc: false, conf: null });
  });

  it("is what `npm start` starts node through, with package.json's node flags", () => {
    const pkg = JSON.parse(readFileSync(`${ROOT}/package.json`, "utf8")) as { scripts: { start: string } };
    expect(pkg.scripts.start).toContain("bash deploy/jemalloc.sh node $npm_package_config_nodeFlags dist/src/main.js");
  });
});
