/**
 * boardline's image, built and run for real with Debian's podman (test/harness/podman.ts), as
 * docs/deploy.md says: deploy/image/build-base.sh builds the bases, then a bare `podman build` of a
 * clean copy of the checkout (no prepared .ci/node or deploy/image/npm, no build argument, no secret)
 * builds the image, and deploy/image/build.sh builds it again with the release labels. It runs
 * read-only, as uid 10001, on the host's network, against a redis-server and the conversion simulator
 * started here on loopback. Through it: a JSON mute, a gRPC Mute over h2c, a ConvertFile watched to
 * Finished over gRPC. And what the image promises: build.sh's image is the same but for its labels,
 * a build without the bases names the script that makes them, the entrypoint, no shell nor npm
 * inside, a non-root process on a read-only root, JSON logs on stdout, and `podman stop` draining
 * (readiness 503 during SHUTDOWN_DELAY_MS) and exiting 0 well within the grace.
 *
 * Layers are cached by podman between runs, and build.sh reuses the bare build's; with an empty
 * cache the build stage fetches Node, npm and the dependencies from the npm registry.
 */
import { randomBytes } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PstnService } from "../../gen/channel/v1/pstn_pb.js";
import { WhiteboardService } from "../../gen/whiteboard/v1/whiteboard_pb.js";
import { type ConversionSimulator, startConversionSimulator } from "../../src/demo/simulator/index.js";
import { ROOT } from "../harness/build-dist.js";
import { DEVELOPMENT_KEYS } from "../harness/development-keys.js";
import {
  BASE_TAG,
  BUILD_BASE_TAG,
  type BuiltImage,
  buildBase,
  buildImage,
  buildPlain,
  cleanCheckout,
  inspectImage,
  podman,
  type RunningContainer,
  runContainer,
} from "../harness/podman.js";
import { freePort, type RedisServerHandle, startRedisServer } from "../harness/redis-server.js";
import { sleep } from "../harness/sleep.js";

const PROJECT = "image-project";
const SECRET = randomBytes(32).toString("base64url");
const KEY = { accessKey: `ak-${randomBytes(4).toString("hex")}`, secretKey: randomBytes(24).toString("base64url") };
const SHUTDOWN_DELAY_MS = 1_000;
const STOP_GRACE_SECONDS = 10;
const pkg = JSON.parse(readFileSync(`${ROOT}/package.json`, "utf8")) as {
  version: string;
  license: string;
  config: { nodeFlags: string };
};

let checkout: string;
/** `podman build` of the clean checkout: what the tests run. */
let image: BuiltImage;
/** deploy/image/build.sh's build of the working tree. */
let released: BuiltImage;
let redis: RedisServerHandle;
let simulator: ConversionSimulator;
let container: RunningContainer;
let url: string;
let seeded: { channel: string; host: string; attendee: string };

const token = (scope?: string) =>
  new SignJWT({ project_id: PROJECT, ...(scope === undefined ? {} : { scope }) })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject("image-test")
    .setIssuedAt()
    .setExpirationTime("1h")
    .sign(new TextEncoder().encode(SECRET));

async function call(method: string, path: string, bearer: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

async function ready(deadlineMs: number): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    const status = await fetch(`${url}/readyz`).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    if (Date.now() > deadline) throw new Error(`not ready: ${JSON.stringify(await container.logs())}`);
    await sleep(100);
  }
}

/** A digest of what the image holds of its own: the node binary and /app, names, modes and contents. */
async function contentDigest(id: string): Promise<string> {
  const probe = `
    const fs = require("node:fs");
    const hash = require("node:crypto").createHash("sha256");
    const walk = (p) => {
      const stat = fs.lstatSync(p);
      hash.update(p + "\\0" + stat.mode + "\\0");
      if (stat.isDirectory()) for (const e of fs.readdirSync(p).sort()) walk(p + "/" + e);
      else hash.update(stat.isSymbolicLink() ? fs.readlinkSync(p) : fs.readFileSync(p));
    };
    ["/usr/local/bin/node", "/app"].forEach(walk);
    console.log(hash.digest("hex"));`;
  const args = ["run", "--rm", "--network", "none", "--read-only", "--entrypoint", "node", id, "-e", probe];
  return (await podman(args)).stdout.trim();
}

beforeAll(async () => {
  await buildBase();
  checkout = cleanCheckout();
  image = await buildPlain(checkout, { tag: "localhost/boardline:test" });
  released = await buildImage({ tag: "localhost/boardline:test-release" });
  console.log(`podman build of a clean checkout: ${image.ms} ms; deploy/image/build.sh after it: ${released.ms} ms`);
  redis = await startRedisServer();
  simulator = await startConversionSimulator({ credentials: { keys: [KEY] }, progressMs: 200 });
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  container = await runContainer(image.id, {
    env: {
      // Loopback only: the container shares the host's network.
      HOST: "127.0.0.1",
      PORT: String(port),
      // Not the fixed default: the host's network is shared with whatever else runs there.
      METRICS_PORT: String(await freePort()),
      REDIS_URL: redis.url,
      JWT_SECRET: SECRET,
      // The image runs with NODE_ENV=production, which requires both key lists.
      ...DEVELOPMENT_KEYS,
      CONVERSION_API_BASE: simulator.url,
      CONVERSION_POLL_FIRST_MS: "200",
      CONVERSION_POLL_MAX_MS: "300",
      SHUTDOWN_DELAY_MS: String(SHUTDOWN_DELAY_MS),
      SHUTDOWN_GRACE_MS: "3000",
    },
  });
  await ready(20_000);
  const admin = await token("channels.admin");
  const created = await call("POST", "/v1/channels", admin, { channel_id: "image-sync" });
  await call("PUT", "/v1/whiteboard/settings", admin, {
    region: "us-sv",
    access_key_pair: { access_key: KEY.accessKey, secret_key: KEY.secretKey },
  });
  seeded = {
    channel: String(created.channel_id),
    host: String(created.host_passphrase),
    attendee: String(created.attendee_passphrase),
  };
}, 600_000);

afterAll(async () => {
  if (checkout !== undefined) rmSync(checkout, { recursive: true, force: true });
  await container?.remove();
  await simulator?.close();
  await redis?.stop();
});

describe("the image", () => {
  it("is what a bare `podman build` of a clean checkout makes: the user, the signal, package.json's node flags", async () => {
    const { Config } = await inspectImage(image.id);
    expect(Config.Entrypoint).toEqual(["node", ...pkg.config.nodeFlags.split(/\s+/), "dist/src/main.js"]);
    expect(Config.User).toBe("10001:10001");
    expect(Config.StopSignal).toBe("SIGTERM");
    expect(Config.Env).toEqual(expect.arrayContaining(["NODE_ENV=production", "HOST=0.0.0.0", "PORT=8080"]));
    expect(Object.keys(Config.ExposedPorts ?? {}).sort()).toEqual(["8080/tcp", "9090/tcp"]);
    const labels = Config.Labels ?? {};
    expect(labels["org.opencontainers.image.title"]).toBe("boardline");
    // The release labels are build.sh's (--label), never a value cached from another build.
    expect(labels).not.toHaveProperty(["org.opencontainers.image.version"]);
  });

  it("is what deploy/image/build.sh makes too, with the release labels", async () => {
    const { Labels: _plainLabels, ...plain } = (await inspectImage(image.id)).Config;
    const { Labels: labels = {}, ...release } = (await inspectImage(released.id)).Config;
    expect(release).toEqual(plain);
    expect(labels["org.opencontainers.image.version"]).toBe(pkg.version);
    expect(labels["org.opencontainers.image.licenses"]).toBe(pkg.license);
    expect(labels["org.opencontainers.image.revision"]).toMatch(/^[0-9a-f]{40}$/);
    expect(labels).toHaveProperty(["org.opencontainers.image.source"]);
    expect(await contentDigest(released.id)).toBe(await contentDigest(image.id));
  });

  it("is built on the bases build-base.sh makes, whose absence names that script", async () => {
    const containerfile = readFileSync(`${ROOT}/Containerfile`, "utf8");
    expect(containerfile).toContain(`\nARG BASE=${BASE_TAG}\n`);
    expect(containerfile).toContain(`\nARG BUILD_BASE=${BUILD_BASE_TAG}\n`);
    const absent = "localhost/deploy/image/build-base.sh:absent";
    const build = await podman(["build", "--retry", "0", "--build-arg", `BUILD_BASE=${absent}`, checkout], {
      check: false,
    });
    expect(build.code).not.toBe(0);
    expect(build.stderr).toContain(`${absent}: `);
  });

  it("holds no shell, no npm, no compiler: node is its only program", async () => {
    const shell = await podman(
      ["run", "--rm", "--network", "none", "--entrypoint", "/bin/sh", image.id, "-c", "true"],
      { check: false },
    );
    expect(shell.code).not.toBe(0);
    const probe = `
      const fs = require("node:fs");
      const programs = ["/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"]
        .flatMap((d) => (fs.existsSync(d) ? fs.readdirSync(d).map((f) => d + "/" + f) : []));
      const present = ["/app/node_modules/npm", "/app/node_modules/typescript", "/usr/local/lib/node_modules",
        "/usr/lib/gcc", "/var/lib/dpkg/status", "/app/src", "/app/test"].filter((p) => fs.existsSync(p));
      console.log(JSON.stringify({ programs, present }));`;
    const { stdout } = await podman([
      "run",
      "--rm",
      "--network",
      "none",
      "--read-only",
      "--entrypoint",
      "node",
      image.id,
      "-e",
      probe,
    ]);
    expect(JSON.parse(stdout)).toEqual({ programs: ["/usr/local/bin/node"], present: [] });
  });
});

describe("the container", () => {
  it("runs as uid 10001 on a read-only root", async () => {
    const { State, HostConfig } = await container.inspect();
    expect(State.Running).toBe(true);
    expect(HostConfig.ReadonlyRootfs).toBe(true);
    // The service's own process, seen from the host (rootful podman: no user namespace).
    const status = readFileSync(`/proc/${State.Pid}/status`, "utf8");
    expect(/^Uid:\s+(.*)$/m.exec(status)?.[1]?.split(/\s+/)).toEqual(["10001", "10001", "10001", "10001"]);
    const root = readFileSync(`/proc/${State.Pid}/mountinfo`, "utf8")
      .split("\n")
      .map((line) => line.split(" "))
      .find((fields) => fields[4] === "/");
    expect(root?.[5]?.split(",")).toContain("ro");
  });

  it("runs node on jemalloc, the base's libjemalloc2, preloaded without a word on stderr", async () => {
    const { Config } = await inspectImage(image.id);
    expect(Config.Env).toContain("LD_PRELOAD=libjemalloc.so.2");
    expect(Config.Env).toContain("MALLOC_CONF=dirty_decay_ms:1000");
    const { State } = await container.inspect();
    const maps = readFileSync(`/proc/${State.Pid}/maps`, "utf8");
    expect(maps).toMatch(/\/libjemalloc\.so\.2$/m);
    // ld.so says "cannot be preloaded" on stderr when the library is missing, and goes on with glibc's malloc.
    expect((await container.logs()).stderr).not.toContain("LD_PRELOAD");
    expect((await container.logs()).stderr).not.toContain("<jemalloc>"); // jemalloc took MALLOC_CONF
  });

  it("mutes over JSON and over gRPC (h2c)", async () => {
    const user = await token();
    expect(
      await call("POST", "/v1/channel/pstn/mute", user, { uid: "pstn-1", passphrase: seeded.host, mute: true }),
    ).toEqual({
      uid: "pstn-1",
      mute: true,
    });
    const pstn = createClient(PstnService, createGrpcTransport({ baseUrl: url }));
    const headers = { authorization: `Bearer ${user}` };
    const muted = await pstn.mute({ uid: "pstn-2", passphrase: seeded.host, mute: true }, { headers });
    expect([muted.uid, muted.mute]).toEqual(["pstn-2", true]);
    const state = await pstn.getPstnState({ channel: { case: "passphrase", value: seeded.host } }, { headers });
    expect(state.participants.map((p) => [p.uid, p.mute])).toEqual([
      ["pstn-1", true],
      ["pstn-2", true],
    ]);
  });

  it("converts a file with the simulator and watches it to Finished over gRPC", async () => {
    const headers = { authorization: `Bearer ${await token()}` };
    const whiteboard = createClient(WhiteboardService, createGrpcTransport({ baseUrl: url }));
    const started = await whiteboard.convertFile(
      { resourceUrl: "https://example.com/deck.pptx", passphrase: seeded.attendee, conversionType: "static" },
      { headers },
    );
    expect(started.taskUuid).not.toBe("");
    const seen: string[] = [];
    for await (const update of whiteboard.watchConversion(
      { taskUuid: started.taskUuid },
      { headers, timeoutMs: 20_000 },
    )) {
      seen.push(update.status);
      if (update.status === "Finished") expect(update.pages.length).toBeGreaterThan(0);
    }
    expect(seen.at(-1)).toBe("Finished");
  }, 30_000);

  it("drains on podman stop (readiness 503, then exit 0 within the grace) and logged JSON lines on stdout", async () => {
    const stopping = container.stop(STOP_GRACE_SECONDS);
    let unready = 0;
    for (const deadline = Date.now() + SHUTDOWN_DELAY_MS; unready === 0 && Date.now() < deadline; await sleep(50)) {
      const status = await fetch(`${url}/readyz`).then(
        (r) => r.status,
        () => 0,
      );
      if (status === 503) unready = status;
    }
    const { exitCode, ms } = await stopping;
    expect(unready).toBe(503);
    expect(exitCode).toBe(0);
    expect(ms).toBeLessThan(STOP_GRACE_SECONDS * 1000 - 2_000);
    const { stdout, stderr } = await container.logs();
    const lines = stdout.split("\n").filter((l) => l !== "");
    expect(lines.length).toBeGreaterThan(2);
    for (const line of lines) expect(() => JSON.parse(line), line).not.toThrow();
    expect(stderr).toBe("");
  }, 30_000);
});
