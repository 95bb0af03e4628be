/**
 * deploy/image/fetch-locked.mjs, which brings the pinned Node and npm into the image's build stage:
 * run as the Containerfile runs it, against a registry on loopback serving tarballs made here. It
 * unpacks what the lock pins, and refuses a tarball whose sha512 is not the lock's, a lock without
 * a sha512, and a path that leaves the folder. test/container/ runs it on the real packages.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../harness/build-dist.js";

interface Entry {
  readonly name: string;
  readonly body?: string;
  readonly mode?: number;
  /** The tar type flag: "0" a file (the default), "5" a folder, "2" a symbolic link, "x" a pax header. */
  readonly type?: string;
}

/** A pax record, "<length> <key>=<value>\n", whose length counts itself. */
function paxRecord(key: string, value: string): string {
  const rest = ` ${key}=${value}\n`;
  let length = rest.length + 1;
  while (String(length).length + rest.length !== length) length++;
  return `${length}${rest}`;
}

/** A gzipped ustar archive of `entries`, as npm pack makes them. */
function tgz(entries: readonly Entry[]): Buffer {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const body = Buffer.from(e.body ?? "");
    const header = Buffer.alloc(512);
    header.write(e.name, 0, 100);
    header.write(`${(e.mode ?? 0o644).toString(8).padStart(7, "0")}\0`, 100);
    header.write("0000000\0", 108);
    header.write("0000000\0", 116);
    header.write(`${body.length.toString(8).padStart(11, "0")}\0`, 124);
    header.write("00000000000\0", 136);
    header.write(" ".repeat(8), 148);
    header.write(e.type ?? "0", 156);
    header.write("ustar\0", 257);
    header.write("00", 263);
    const sum = header.reduce((a, b) => a + b, 0);
    header.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148);
    blocks.push(header, body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(blocks));
}

const sha512 = (b: Buffer) => `sha512-${createHash("sha512").update(b).digest("base64")}`;
const served = new Map<string, Buffer>();
const folders: string[] = [];
let server: Server;
let registry: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    const body = served.get(req.url ?? "");
    res.writeHead(body === undefined ? 404 : 200).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  registry = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

/** Serves `tarball`, writes a lock pinning it with `integrity` (its sha512 unless given), and runs the script. */
async function fetchLocked(tarball: Buffer, o: { integrity?: string } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "bl-fetch-locked-"));
  folders.push(dir);
  const path = `/demo/-/demo-1.2.3-${served.size}.tgz`;
  served.set(path, tarball);
  const lock = join(dir, "package-lock.json");
  const entry = { version: "1.2.3", resolved: `${registry}${path}`, integrity: o.integrity ?? sha512(tarball) };
  writeFileSync(lock, JSON.stringify({ lockfileVersion: 3, packages: { "node_modules/demo": entry } }));
  const folder = join(dir, "out");
  const ran = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, "deploy/image/fetch-locked.mjs"), lock, "demo", folder],
      (err, stdout, stderr) => resolve({ code: err === null ? 0 : Number(err.code), stdout, stderr }),
    );
  });
  return { ...ran, folder };
}

describe("deploy/image/fetch-locked.mjs", () => {
  it("unpacks the package the lock pins: files and folders, without package/, the exec bit kept, links skipped", async () => {
    const long = `package/${"deep/".repeat(30)}file.js`;
    const { code, stdout, folder } = await fetchLocked(
      tgz([
        { name: "package/package.json", body: '{"name":"demo"}' },
        { name: "package/bin/", type: "5", mode: 0o755 },
        { name: "package/bin/demo", body: "#!/bin/sh\n", mode: 0o755 },
        { name: "PaxHeader", type: "x", body: paxRecord("path", long) },
        { name: "package/truncated", body: "long" },
        { name: "package/link", type: "2" },
      ]),
    );
    expect(code).toBe(0);
    expect(stdout).toContain("demo@1.2.3");
    expect(readFileSync(join(folder, "package.json"), "utf8")).toBe('{"name":"demo"}');
    expect(statSync(join(folder, "bin/demo")).mode & 0o777).toBe(0o755);
    expect(statSync(join(folder, "package.json")).mode & 0o777).toBe(0o644);
    expect(readFileSync(join(folder, long.slice("package/".length)), "utf8")).toBe("long");
    expect(existsSync(join(folder, "truncated"))).toBe(false);
    expect(existsSync(join(folder, "link"))).toBe(false);
  });

  it("refuses a tarball whose sha512 is not the lock's, and writes nothing", async () => {
    const other = tgz([{ name: "package/index.js", body: "other" }]);
    const { code, stderr, folder } = await fetchLocked(tgz([{ name: "package/index.js", body: "evil" }]), {
      integrity: sha512(other),
    });
    expect(code).toBe(1);
    expect(stderr).toMatch(/is not what .*package-lock\.json pins: sha512-/);
    expect(existsSync(folder)).toBe(false);
  });

  it("refuses a lock without a sha512 integrity", async () => {
    const tarball = tgz([{ name: "package/index.js", body: "x" }]);
    const sha1 = `sha1-${createHash("sha1").update(tarball).digest("base64")}`;
    const { code, stderr, folder } = await fetchLocked(tarball, { integrity: sha1 });
    expect(code).toBe(1);
    expect(stderr).toContain("gives demo no sha512 integrity");
    expect(existsSync(folder)).toBe(false);
  });

  it("refuses a path that leaves the folder", async () => {
    const { code, stderr, folder } = await fetchLocked(tgz([{ name: "package/../../escaped.js", body: "x" }]));
    expect(code).toBe(1);
    expect(stderr).toContain("holds the path package/../../escaped.js");
    expect(existsSync(join(folder, "../../escaped.js"))).toBe(false);
  });
});
