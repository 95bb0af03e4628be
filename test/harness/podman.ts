/**
 * Debian's podman for the tests that build and run boardline's image (test/container/, deploy/).
 *
 * The two adjustments these machines need live here and only here, not in the Containerfile or
 * the build scripts (an ordinary host needs neither):
 * - the runtime is runc: crun refuses the machines' hybrid cgroups (`--runtime runc`, and
 *   `runtime = "runc"` in the configuration, so `podman build` run by a script uses it too);
 * - `default_ulimits = []`: the sandbox refuses podman's default raise of RLIMIT_NOFILE and
 *   RLIMIT_NPROC.
 * Both are in a containers.conf this module writes once per process and passes through
 * CONTAINERS_CONF to every podman it runs (`podmanEnv()` gives the same environment to a script).
 *
 * `buildBase()` and `buildImage()` run deploy/image/build-base.sh and deploy/image/build.sh, and
 * `buildPlain()` a bare `podman build` of a `cleanCheckout()`, the commands docs/deploy.md documents;
 * `runContainer()` starts the image read-only, as uid 10001, on the host's network, and removes it
 * when the test process exits.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  copyFileSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { ROOT } from "./build-dist.js";
import { spawnTied } from "./tied-spawn.js";

/** The bases deploy/image/build-base.sh builds: the runtime stage's and the build stage's. */
export const BASE_TAG = "localhost/deploy/image/build-base.sh:bookworm";
export const BUILD_BASE_TAG = "localhost/deploy/image/build-base.sh:bookworm-build";

let conf: string | undefined;
/** The environment for podman and for scripts that run it: CONTAINERS_CONF set to the generated file. */
export function podmanEnv(): NodeJS.ProcessEnv {
  if (conf === undefined) {
    conf = join(mkdtempSync(join(tmpdir(), "bl-podman-")), "containers.conf");
    writeFileSync(conf, '[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = "runc"\n');
  }
  return { ...process.env, CONTAINERS_CONF: conf };
}

export interface Ran {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command to its end (tied to this process), with podmanEnv(); rejects on a non-zero exit unless `check` is false. */
export function runCommand(
  command: string,
  args: readonly string[],
  o: { check?: boolean; env?: Record<string, string> } = {},
): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawnTied(command, args, {
      cwd: ROOT,
      env: { ...podmanEnv(), ...o.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += String(d);
    });
    child.stderr.on("data", (d) => {
      stderr += String(d);
    });
    child.once("error", reject);
    child.once("close", (code) => {
      const ran = { code: code ?? -1, stdout, stderr };
      if (code !== 0 && o.check !== false) {
        reject(new Error(`${command} ${args.join(" ")} exited ${code}:\n${stderr.slice(-4000)}${stdout.slice(-2000)}`));
      } else resolve(ran);
    });
  });
}

/** `podman --runtime runc <args>`. */
export function podman(args: readonly string[], o: { check?: boolean } = {}): Promise<Ran> {
  return runCommand("podman", ["--runtime", "runc", ...args], o);
}

/** The fields of `podman image inspect` the tests read. */
export interface ImageInspection {
  readonly Id: string;
  readonly Size: number;
  readonly Created: string;
  readonly Config: {
    readonly User?: string;
    readonly Env?: string[];
    readonly Entrypoint?: string[];
    readonly Cmd?: string[] | null;
    readonly StopSignal?: string;
    readonly ExposedPorts?: Record<string, unknown>;
    readonly Labels?: Record<string, string>;
  };
  readonly RootFS: { readonly Layers: string[] };
}

/** The fields of `podman container inspect` the tests read. */
export interface ContainerInspection {
  readonly Id: string;
  readonly State: {
    readonly Status: string;
    readonly Running: boolean;
    readonly ExitCode: number;
    readonly Pid: number;
  };
  readonly HostConfig: { readonly ReadonlyRootfs: boolean };
  readonly Config: { readonly User?: string };
}

/** `podman image inspect`, parsed. */
export async function inspectImage(image: string): Promise<ImageInspection> {
  const { stdout } = await podman(["image", "inspect", image]);
  return (JSON.parse(stdout) as ImageInspection[])[0] as ImageInspection;
}

/** `podman container inspect`, parsed. */
export async function inspectContainer(container: string): Promise<ContainerInspection> {
  const { stdout } = await podman(["container", "inspect", container]);
  return (JSON.parse(stdout) as ContainerInspection[])[0] as ContainerInspection;
}

/**
 * The bases (deploy/image/build-base.sh), unless images of the same recipe are there already: the
 * script labels both with its own sha256. Resolves to the runtime base's tag.
 */
export async function buildBase(): Promise<string> {
  const recipe = createHash("sha256")
    .update(readFileSync(join(ROOT, "deploy/image/build-base.sh")))
    .digest("hex");
  const current = async (tag: string) =>
    (await podman(["image", "exists", tag], { check: false })).code === 0 &&
    (await inspectImage(tag)).Config.Labels?.["boardline.base.recipe"] === recipe;
  if ((await current(BASE_TAG)) && (await current(BUILD_BASE_TAG))) return BASE_TAG;
  await runCommand("bash", ["deploy/image/build-base.sh", BASE_TAG, BUILD_BASE_TAG]);
  return BASE_TAG;
}

export interface BuiltImage {
  /** The full image id (sha256:…). */
  readonly id: string;
  readonly tag: string;
  /** How long the build took. */
  readonly ms: number;
}

/**
 * A copy of the checkout as a fresh clone holds it, in a new temporary folder: the files git tracks and
 * the new ones it does not ignore, as the working tree has them (uncommitted edits count), and none
 * that it ignores, such as installed node_modules folders.
 */
export function cleanCheckout(): string {
  const dir = mkdtempSync(join(tmpdir(), "bl-checkout-"));
  const listed = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: ROOT,
    encoding: "utf8",
  });
  for (const file of new Set(listed.split("\0").filter((f) => f !== ""))) {
    const from = join(ROOT, file);
    const stat = lstatSync(from, { throwIfNoEntry: false });
    if (stat === undefined) continue; // deleted in the working tree
    mkdirSync(dirname(join(dir, file)), { recursive: true });
    if (stat.isSymbolicLink()) symlinkSync(readlinkSync(from), join(dir, file));
    else copyFileSync(from, join(dir, file));
  }
  return dir;
}

/** `podman build --tag <tag> <context>`, nothing more: no build argument, no secret (and --iidfile). */
export async function buildPlain(
  context: string,
  o: { tag: string; extraArgs?: readonly string[] },
): Promise<BuiltImage> {
  const iidfile = join(mkdtempSync(join(tmpdir(), "bl-iid-")), "iid");
  const started = Date.now();
  await podman(["build", "--iidfile", iidfile, "--tag", o.tag, ...(o.extraArgs ?? []), context]);
  return { id: readFileSync(iidfile, "utf8").trim(), tag: o.tag, ms: Date.now() - started };
}

/** deploy/image/build.sh (podman's layer cache makes a second build of one checkout quick). */
export async function buildImage(o: { tag?: string; extraArgs?: readonly string[] } = {}): Promise<BuiltImage> {
  const tag = o.tag ?? "localhost/boardline:test";
  const iidfile = join(mkdtempSync(join(tmpdir(), "bl-iid-")), "iid");
  const started = Date.now();
  await runCommand("bash", ["deploy/image/build.sh", "--iidfile", iidfile, ...(o.extraArgs ?? [])], {
    env: { IMAGE_TAG: tag },
  });
  return { id: readFileSync(iidfile, "utf8").trim(), tag, ms: Date.now() - started };
}

export interface RunningContainer {
  readonly id: string;
  readonly name: string;
  /** What the container printed on stdout and on stderr so far (`podman logs`). */
  logs(): Promise<{ stdout: string; stderr: string }>;
  /** `podman stop -t <grace>` (SIGTERM, then SIGKILL after the grace); resolves to the exit code and the time taken. */
  stop(graceSeconds: number): Promise<{ exitCode: number; ms: number }>;
  /** `podman container inspect`. */
  inspect(): Promise<ContainerInspection>;
  /** `podman rm -f`. Idempotent. */
  remove(): Promise<void>;
}

const started = new Set<string>();
process.once("exit", () => {
  for (const name of started) {
    try {
      execFileSync("podman", ["--runtime", "runc", "rm", "-f", "-t", "0", name], {
        env: podmanEnv(),
        stdio: "ignore",
      });
    } catch {
      // already gone
    }
  }
});

/**
 * `podman run -d --read-only --user 10001 --network host` of `image` with `env`, plus `args`
 * (more podman run options). The container is removed by `remove()`, or when this process exits.
 */
export async function runContainer(
  image: string,
  o: { env?: Record<string, string>; args?: readonly string[]; name?: string } = {},
): Promise<RunningContainer> {
  const name = o.name ?? `bl-test-${process.pid}-${started.size}-${Date.now() % 100_000}`;
  const env = Object.entries(o.env ?? {}).flatMap(([k, v]) => ["--env", `${k}=${v}`]);
  started.add(name);
  const { stdout } = await podman([
    "run",
    "--detach",
    "--name",
    name,
    "--read-only",
    "--user",
    "10001",
    "--network",
    "host",
    ...env,
    ...(o.args ?? []),
    image,
  ]);
  const id = stdout.trim();
  return {
    id,
    name,
    async logs() {
      const { stdout: out, stderr: err } = await podman(["logs", name]);
      return { stdout: out, stderr: err };
    },
    async stop(graceSeconds) {
      const t0 = Date.now();
      await podman(["stop", "--time", String(graceSeconds), name]);
      const ms = Date.now() - t0;
      return { exitCode: (await inspectContainer(name)).State.ExitCode, ms };
    },
    inspect: () => inspectContainer(name),
    async remove() {
      await podman(["rm", "-f", "-t", "0", name], { check: false });
      started.delete(name);
    },
  };
}
