// Run in the image's build stage after the prune to production dependencies: deletes from
// node_modules the files Node never reads at run time, source maps (read only with
// --enable-source-maps, which the image does not set) and TypeScript declarations.
// Usage: node trim-node-modules.mjs <node_modules folder>
import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";

const UNREAD = /\.(map|d\.ts|d\.mts|d\.cts)$/;
const folder = process.argv[2];
if (folder === undefined) throw new Error("usage: node trim-node-modules.mjs <node_modules folder>");
let count = 0;
for (const entry of readdirSync(folder, { recursive: true, withFileTypes: true })) {
  if (entry.isFile() && UNREAD.test(entry.name)) {
    rmSync(join(entry.parentPath, entry.name));
    count++;
  }
}
console.log(`trim-node-modules: ${count} source maps and type declarations deleted`);
