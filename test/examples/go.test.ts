/**
 * examples/go against a live boardline: generated from proto/ with `buf
 * generate` (Debian's protoc-gen-go and protoc-gen-go-grpc), built with
 * Debian's Go and grpc-go in GOPATH mode, then run as a user would. Each
 * error a caller handles happens to it once: an expired token
 * (UNAUTHENTICATED, not retried), a refused passphrase and a missing scope
 * (PERMISSION_DENIED, not retried), the wrong-passphrase limit
 * (RESOURCE_EXHAUSTED: it waits retry_after_seconds, then succeeds) and Redis
 * down (UNAVAILABLE: it backs off until Redis is up again); a watch
 * resumes from its cursor after the connection is cut; and, as the telephone
 * gateway, it reports a caller's join and acts on the answer.
 */
import { type ChildProcess, execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, beforeEach, expect, test } from "vitest";
import { ROOT } from "../harness/build-dist.js";
import {
  GUESS_LIMIT,
  GUESS_WINDOW_SECONDS,
  type LiveBoardline,
  startLiveBoardline,
} from "../harness/live-boardline.js";
import { spawnTied } from "../harness/tied-spawn.js";

const EXAMPLE = join(ROOT, "examples/go");
const GEN = join(EXAMPLE, "gen");
const BINARY = join(GEN, "bin/boardline-go");
const GOCODE = "/usr/share/gocode/src";
// Go's build cache is keyed by the content of every input, so reusing it between runs is safe;
// a fresh clone (CI) starts without it.
const GOCACHE = join(ROOT, "node_modules/.cache/go-build");

/** What the example needs from Debian, and how to tell it is there. */
const NEEDED: Array<[string, () => boolean]> = [
  ["golang-go", () => onPath("go")],
  ["protoc-gen-go", () => onPath("protoc-gen-go")],
  ["protoc-gen-go-grpc", () => onPath("protoc-gen-go-grpc")],
  ["golang-google-grpc-dev", () => existsSync(`${GOCODE}/google.golang.org/grpc/status`)],
  ["golang-google-protobuf-dev", () => existsSync(`${GOCODE}/google.golang.org/protobuf/proto`)],
  ["golang-google-genproto-dev", () => existsSync(`${GOCODE}/google.golang.org/genproto/googleapis/rpc/errdetails`)],
  // github.com/golang/protobuf 1.3 (what grpc-dev alone pulls in) panics on `optional` fields.
  [
    "golang-github-golang-protobuf-1-5-dev",
    () => readIf(`${GOCODE}/github.com/golang/protobuf/go.mod`).includes("google.golang.org/protobuf v"),
  ],
];

const run = promisify(execFile);
let live: LiveBoardline;
let buildMs = 0;
/** Why the program cannot run: each test fails with it (a failed beforeAll would count no failed test). */
let unusable = "";

beforeAll(async () => {
  const missing = NEEDED.filter(([, present]) => !present()).map(([pkg]) => pkg);
  if (missing.length > 0) {
    unusable = `examples/go needs Debian's ${missing.join(", ")}: apt-get install ${missing.join(" ")}`;
    return;
  }
  const started = startLiveBoardline();
  const t0 = Date.now();
  try {
    await run("npx", ["buf", "generate"], { cwd: EXAMPLE });
    const goEnv = { ...process.env, GO111MODULE: "off", GOPATH: `${GEN}:/usr/share/gocode`, GOCACHE, GOFLAGS: "" };
    await run("go", ["build", "-o", BINARY, "."], { cwd: EXAMPLE, env: goEnv });
  } catch (e) {
    // A proto the example no longer matches lands here: the Go compiler's errors name what changed.
    unusable = `examples/go does not generate or build from proto/: ${(e as { stderr?: string }).stderr || String(e)}`;
  } finally {
    live = await started;
  }
  buildMs = Date.now() - t0;
}, 180_000);
beforeEach(() => {
  if (unusable) throw new Error(unusable);
});
/** Programs still running when the tests end (a watch a failed test left open). */
const running = new Set<ChildProcess>();
afterAll(async () => {
  for (const proc of running) proc.kill("SIGKILL");
  await live?.stop();
});

interface Line {
  step: string;
  [k: string]: unknown;
}
interface Outcome {
  code: number | null;
  lines: Line[];
  ms: number;
  stderr: string;
}

/** Starts the program with the live boardline's variables (and `env` over them). */
function start(args: string[], env: Record<string, string> = {}) {
  const t0 = Date.now();
  const proc = spawnTied(BINARY, args, {
    env: { PATH: process.env.PATH ?? "", ...live.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(proc);
  proc.once("exit", () => running.delete(proc));
  const lines: Line[] = [];
  const waiters: Array<() => void> = [];
  let rest = "";
  let stderr = "";
  proc.stdout.on("data", (d) => {
    const parts = (rest + String(d)).split("\n");
    rest = parts.pop() ?? "";
    for (const p of parts) lines.push(JSON.parse(p) as Line);
    for (const w of waiters) w();
  });
  proc.stderr.on("data", (d) => {
    stderr += String(d);
  });
  const done = new Promise<Outcome>((resolve) =>
    proc.once("exit", (code) => resolve({ code, lines, ms: Date.now() - t0, stderr })),
  );
  /** Resolves with the first line (from index `from`) that `match` accepts. */
  const line = (match: (l: Line) => boolean, from = 0) =>
    new Promise<Line>((resolve, reject) => {
      const look = () => {
        const found = lines.slice(from).find(match);
        if (found) resolve(found);
      };
      waiters.push(look);
      look();
      void done.then((o) => reject(new Error(`exited ${o.code} first: ${JSON.stringify(o.lines)} ${o.stderr}`)));
    });
  return { proc, lines, line, done };
}

const program = (args: string[], env: Record<string, string> = {}) => start(args, env).done;
const steps = (o: Outcome, step: string) => o.lines.filter((l) => l.step === step);
/** What the program printed, for an assertion's message. */
const said = (o: Outcome) => `${o.lines.map((l) => JSON.stringify(l)).join("\n")}\n${o.stderr}`;

test("generates and builds with Debian's Go toolchain; the sources are gofmt-clean", async () => {
  console.log(`examples/go: buf generate + go build took ${buildMs} ms`);
  expect(existsSync(BINARY)).toBe(true);
  const goSources = readdirSync(EXAMPLE).filter((f) => f.endsWith(".go"));
  expect(goSources.length).toBeGreaterThan(0);
  expect((await run("gofmt", ["-l", ...goSources], { cwd: EXAMPLE })).stdout).toBe("");
});

test("mutes and unmutes with the host passphrase; the gateway reads the state by channel id", async () => {
  const muted = await program(["mute", "-uid", "pstn-1001"]);
  expect(muted.code, said(muted)).toBe(0);
  expect(steps(muted, "mute")).toEqual([{ step: "mute", uid: "pstn-1001", mute: true }]);
  const state = await program(["state"]);
  expect(state.code, said(state)).toBe(0);
  expect(steps(state, "state")[0]).toMatchObject({ channel_id: live.channel, muted: { "pstn-1001": true } });
  expect((await program(["mute", "-uid", "pstn-1001", "-mute=false"])).code).toBe(0);
  expect(steps(await program(["state"]), "state")[0]?.muted).toEqual({ "pstn-1001": false });
});

test("UNAUTHENTICATED: an expired token is not retried; it says to get a fresh token", async () => {
  const expired = await live.token({ expSeconds: -60 });
  const o = await program(["mute", "-uid", "pstn-1001"], { BOARDLINE_TOKEN: expired });
  expect(o.code, said(o)).toBe(3);
  expect(steps(o, "retry")).toEqual([]);
  expect(steps(o, "error")).toEqual([
    expect.objectContaining({
      code: "Unauthenticated",
      numeric_code: 401,
      advice: expect.stringMatching(/fresh token/),
    }),
  ]);
});

test("PERMISSION_DENIED: an attendee's passphrase mutes nothing, a token without the gateway scope reads nothing; neither is retried", async () => {
  const attendee = await program(["mute", "-uid", "pstn-1001", "-passphrase", live.attendeePassphrase], {
    BOARDLINE_TOKEN: await live.token({ subject: "attendee" }),
  });
  const unscoped = await program(["state"], { BOARDLINE_GATEWAY_TOKEN: live.tokens.user });
  for (const o of [attendee, unscoped]) {
    expect(o.code, said(o)).toBe(4);
    expect(steps(o, "retry")).toEqual([]);
    expect(steps(o, "error")).toEqual([expect.objectContaining({ code: "PermissionDenied", numeric_code: 403 })]);
  }
});

test("RESOURCE_EXHAUSTED: past the guess limit it waits retry_after_seconds, then the mute goes through", async () => {
  const env = { BOARDLINE_TOKEN: await live.token({ subject: "go-guesser" }) };
  for (let i = 0; i < GUESS_LIMIT; i++) {
    expect((await program(["mute", "-passphrase", `wrong-${i}`], env)).code).toBe(4);
  }
  const o = await program(["mute", "-uid", "pstn-1002"], env);
  expect(o.code, said(o)).toBe(0);
  const retries = steps(o, "retry");
  expect(retries).toEqual([expect.objectContaining({ call: "Mute", code: "ResourceExhausted", numeric_code: 429 })]);
  const after = Number(retries[0]?.retry_after_seconds);
  expect(after).toBeGreaterThanOrEqual(1);
  expect(after).toBeLessThanOrEqual(GUESS_WINDOW_SECONDS);
  expect(Number(retries[0]?.wait_ms)).toBeGreaterThanOrEqual(after * 1000); // one wait, the whole of it
  expect(o.ms).toBeGreaterThanOrEqual(after * 1000);
  expect(o.ms).toBeLessThan(after * 1000 + 1500);
  expect(steps(o, "mute")).toEqual([{ step: "mute", uid: "pstn-1002", mute: true }]);
});

test("UNAVAILABLE: with Redis down it backs off and retries until Redis is up again", async () => {
  live.redisDown();
  const call = start(["mute", "-uid", "pstn-1003"]);
  await call.line((l) => l.step === "retry");
  await new Promise((r) => setTimeout(r, 1000));
  await live.redisUp();
  const o = await call.done;
  expect(o.code, said(o)).toBe(0);
  const retries = steps(o, "retry");
  expect(retries.length).toBeGreaterThanOrEqual(3);
  for (const r of retries) expect(r).toMatchObject({ call: "Mute", code: "Unavailable", numeric_code: 503 });
  const waits = retries.map((r) => Number(r.wait_ms));
  expect(waits[2]).toBeGreaterThan(waits[0] ?? 0); // exponential: 100, 200, 400 ms (±20 %)
  expect(steps(o, "mute")).toEqual([{ step: "mute", uid: "pstn-1003", mute: true }]);
});

test("a watch resumes from its last cursor after the connection is cut: the next event, none twice", async () => {
  const watch = start(["watch", "-count", "2"]);
  await watch.line((l) => l.step === "watching");
  expect((await program(["mute", "-uid", "pstn-watch"])).code).toBe(0);
  const first = await watch.line((l) => l.step === "event");
  const seen = watch.lines.length;
  live.cutConnections();
  const resumed = await watch.line((l) => l.step === "watching", seen);
  expect(resumed.after).toBe(first.cursor);
  expect((await program(["mute", "-uid", "pstn-watch", "-mute=false"])).code).toBe(0);
  const o = await watch.done;
  expect(o.code, said(o)).toBe(0);
  const events = steps(o, "event");
  expect(events.map((e) => [e.uid, e.mute])).toEqual([
    ["pstn-watch", true],
    ["pstn-watch", false],
  ]);
  expect(new Set(events.map((e) => e.event_id)).size).toBe(2);
  const retries = steps(o, "retry");
  expect(retries.length).toBeGreaterThanOrEqual(1);
  for (const r of retries) expect(r).toMatchObject({ call: "WatchPstnEvents", code: "Unavailable" });
});

/** Sets the channel's policy by its id, as a meeting backend does (scope `channels.admin`). */
async function setPolicy(policy: { mute_on_join: boolean }): Promise<void> {
  const res = await fetch(`${live.url}/v1/channel/pstn/policy`, {
    method: "POST",
    headers: { authorization: `Bearer ${live.tokens.admin}`, "content-type": "application/json" },
    body: JSON.stringify({ channel_id: live.channel, ...policy }),
  });
  expect(res.status).toBe(200);
}

// Last: the callers it joins stay on the line (the mute test above reads the whole state).
test("as the gateway it reports a join and starts the caller as the answer says; a repeat and a late join change nothing", async () => {
  const first = await program(["join", "-uid", "pstn-go-join-1", "-sequence", "1"]);
  expect(first.code, said(first)).toBe(0);
  expect(steps(first, "join")).toEqual([
    expect.objectContaining({
      uid: "pstn-go-join-1",
      outcome: "LINE_OUTCOME_APPLIED",
      action: "admit",
      start_muted: false,
      on_line: true,
    }),
  ]);
  const repeated = await program(["join", "-uid", "pstn-go-join-1", "-sequence", "1"]);
  expect(steps(repeated, "join")).toEqual([
    expect.objectContaining({ outcome: "LINE_OUTCOME_DUPLICATE", action: "admit", start_muted: false }),
  ]);

  await setPolicy({ mute_on_join: true });
  try {
    const muted = await program(["join", "-uid", "pstn-go-join-2", "-caller-id", "***5678"]);
    expect(muted.code, said(muted)).toBe(0);
    expect(steps(muted, "join")).toEqual([
      expect.objectContaining({ outcome: "LINE_OUTCOME_APPLIED", action: "admit", start_muted: true }),
    ]);
  } finally {
    await setPolicy({ mute_on_join: false });
  }

  // The caller hung up (sequence 2) before the gateway's join (sequence 1) arrived: the join is late.
  const left = await fetch(`${live.url}/v1/channel/pstn/line:report`, {
    method: "POST",
    headers: { authorization: `Bearer ${live.tokens.gateway}`, "content-type": "application/json" },
    body: JSON.stringify({ channel_id: live.channel, uid: "pstn-go-join-3", sequence: "2", leave: {} }),
  });
  expect(left.status).toBe(200);
  const late = await program(["join", "-uid", "pstn-go-join-3", "-sequence", "1"]);
  expect(late.code, said(late)).toBe(0);
  expect(steps(late, "join")).toEqual([
    expect.objectContaining({ outcome: "LINE_OUTCOME_STALE", action: "ignore", on_line: false }),
  ]);
  expect(steps(late, "retry")).toEqual([]);
});

function onPath(command: string): boolean {
  return (process.env.PATH ?? "").split(":").some((dir) => existsSync(join(dir, command)));
}

function readIf(file: string): string {
  return existsSync(file) ? readFileSync(file, "utf8") : "";
}
