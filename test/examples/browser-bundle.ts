/**
 * The browser example as its tests build it: a copy of its sources in a
 * directory of the test's own under test-output/ (git-ignored), so test
 * files running side by side never clean each other's generated code; the
 * client generated from proto/ beside them (`buf generate` with
 * protoc-gen-es into gen/, as the example's README does it), the copy
 * type-checked, and a page's script bundled with esbuild; and a loopback
 * site that serves the example's pages from another origin than boardline's.
 */
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { basename, dirname, join, relative } from "node:path";
import { build } from "esbuild";
import { spawnTied } from "../harness/tied-spawn.js";

export const EXAMPLE = "examples/browser";

/** `buf generate`, `tsc` on the example, then one esbuild bundle of `entry`; a stale proto fails here. */
export async function generateAndBundle(entry: string, timings: Record<string, number>): Promise<Uint8Array> {
  const copy = join("test-output", `browser-build-${basename(entry, ".ts")}-${process.pid}`);
  rmSync(copy, { recursive: true, force: true });
  mkdirSync(copy, { recursive: true });
  for (const file of readdirSync(EXAMPLE)) {
    if (file.endsWith(".ts") || file === "tsconfig.json") copyFileSync(join(EXAMPLE, file), join(copy, file));
  }
  let at = Date.now();
  await run("../../node_modules/.bin/buf", ["generate", "-o", relative(EXAMPLE, copy)], EXAMPLE);
  timings.generate = Date.now() - at;
  at = Date.now();
  await run(process.execPath, ["node_modules/typescript/bin/tsc", "-p", `${copy}/tsconfig.json`], ".");
  timings.typecheck = Date.now() - at;
  at = Date.now();
  const out = await build({
    entryPoints: [`${copy}/${entry}`],
    bundle: true,
    format: "esm",
    target: "es2022",
    minify: true,
    write: false,
    logLevel: "silent",
  });
  timings.bundle = Date.now() - at;
  const js = out.outputFiles[0];
  if (js === undefined) throw new Error("esbuild wrote no bundle");
  timings.bundleBytes = js.contents.byteLength;
  rmSync(copy, { recursive: true, force: true });
  return js.contents;
}

function run(command: string, args: string[], cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH}` };
    const child = spawnTied(command, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.on("error", reject);
    child.on("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`${command} ${args.join(" ")} exited ${code}:\n${output}`)),
    );
  });
}

export interface Site {
  readonly server: http.Server;
  /** `http://127.0.0.1:<port>` */
  readonly origin: string;
}

/** Serves the example's `page` at `/` and the bundle `script()` gives at `/<scriptPath>`. */
export async function serveExample(page: string, scriptPath: string, script: () => Uint8Array | undefined) {
  const server = http.createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://site").pathname;
    const body = path === "/" ? readFileSync(join(EXAMPLE, page)) : path === scriptPath ? script() : undefined;
    res.writeHead(body === undefined ? 404 : 200, {
      "content-type": path === scriptPath ? "text/javascript" : "text/html; charset=utf-8",
    });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` } satisfies Site;
}
