// Preloaded into a process under test (NODE_OPTIONS="--import <this file>"):
// appends the URL of every module the process resolves from node_modules/@opentelemetry
// to the file named by RECORD_MODULES_FILE, so a test can tell which were loaded.
import { appendFileSync } from "node:fs";
import { registerHooks } from "node:module";

const file = process.env.RECORD_MODULES_FILE;
registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    if (file && resolved.url.includes("/node_modules/@opentelemetry/")) appendFileSync(file, `${resolved.url}\n`);
    return resolved;
  },
});
