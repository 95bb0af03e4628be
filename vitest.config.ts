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
    reporters,
  },
});
