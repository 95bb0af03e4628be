/**
 * The process's own series: what build runs (`boardline_build_info`) and
 * whether it is ready (`boardline_ready`, what /readyz answers).
 */
import { readFileSync } from "node:fs";
import { Gauge, type Registry } from "prom-client";

/**
 * `boardline_build_info{version,revision,node} 1`. The image records its git
 * revision only as an image label (deploy/image/build.sh passes it with
 * `--label`, not as a build argument, for podman's layer cache), which the
 * process cannot read: its revision is `unknown`.
 */
export function registerBuildInfo(registry: Registry): void {
  new Gauge({
    name: "boardline_build_info",
    help: "Always 1: the version (package.json), the git revision (unknown when the build did not record it) and the Node.js version of this process.",
    labelNames: ["version", "revision", "node"],
    registers: [registry],
  }).set({ version: ownVersion(), revision: "unknown", node: process.version }, 1);
}

/** `boardline_ready`: 1 when `/readyz` would answer 200 (not draining, the store answering), else 0. */
export function registerReady(registry: Registry, ready: () => Promise<boolean>): void {
  new Gauge({
    name: "boardline_ready",
    help: "1 when /readyz answers 200 (not draining, the store answering), 0 when it answers 503; asked at each scrape.",
    registers: [registry],
    async collect() {
      this.set((await ready()) ? 1 : 0);
    },
  });
}

/**
 * The version in boardline's package.json: two levels above this file's
 * directory when run from the sources, three in dist.
 */
function ownVersion(): string {
  for (const up of ["../../../package.json", "../../../../package.json"]) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(up, import.meta.url), "utf8")) as Record<string, unknown>;
      const version = pkg["version"];
      if (pkg["name"] === "boardline" && typeof version === "string") return version;
    } catch {
      // Not there (sources or dist, whichever this is not): the other.
    }
  }
  return "unknown";
}
