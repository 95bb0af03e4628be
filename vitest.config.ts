import { defineConfig } from "vitest/config";

// Under CI, a JSON report is written too, so .ci/run can print honest counts.
const reporters: Array<string | [string, Record<string, unknown>]> = process.env.CI
  ? ["default", ["json", { outputFile: ".ci/test-results.json" }]]
  : ["default"];

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/harness/global-setup.ts"],
    testTimeout: 20_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Two files at a time (vitest's default on 2 cores is one): the suite mostly waits on the servers,
    // Redis topologies, builds and browsers it starts, so one at a time leaves the CPUs mostly idle.
    maxWorkers: 2,
    reporters,
  },
});
