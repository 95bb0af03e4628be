// Adds lock entries for the other platforms' optional binary packages of
// @bufbuild/buf and @biomejs/biome (e.g. @bufbuild/buf-darwin-arm64).
//
// The registry this project installs from serves only this platform's binary
// packages, so `npm install` leaves the others out of package-lock.json, and
// `npm ci` then refuses the lock as out of sync with package.json. npm never
// fetches an optional package of another platform, so an entry naming its
// version, os and cpu is all `npm ci` needs. Run after `npm install`:
//   node .ci/complete-lock.mjs
import fs from "node:fs";

const file = new URL("../package-lock.json", import.meta.url);
const lock = JSON.parse(fs.readFileSync(file, "utf8"));
const PLATFORM = /-(android|darwin|freebsd|linux|openbsd|sunos|win32)-([a-z0-9]+?)(-musl|-gnu)?$/;
let added = 0;
for (const [path, pkg] of Object.entries(lock.packages)) {
  for (const [name, version] of Object.entries(pkg.optionalDependencies ?? {})) {
    const key = `node_modules/${name}`;
    if (lock.packages[key] !== undefined) continue;
    const m = PLATFORM.exec(name);
    if (m === null) throw new Error(`${path}: optional dependency ${name} is missing from the lock and is not a platform binary`);
    const entry = { version, cpu: [m[2]] };
    if (pkg.dev) entry.dev = true;
    if (m[3] === "-musl") entry.libc = ["musl"];
    entry.optional = true;
    entry.os = [m[1]];
    lock.packages[key] = entry;
    added++;
  }
}
const byPath = ([a], [b]) => (a === b ? 0 : a === "" ? -1 : b === "" ? 1 : a < b ? -1 : 1);
lock.packages = Object.fromEntries(Object.entries(lock.packages).sort(byPath));
fs.writeFileSync(file, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`complete-lock: ${added} platform entries added`);
