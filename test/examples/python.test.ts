/**
 * The Python example (examples/python/): generated from proto/ with Debian's
 * protoc and grpc_python_plugin by its own generate.sh, then run with Debian's
 * python3 against a live boardline and its conversion simulator. It converts a
 * document (queued, then watched to its end) and prints the pages, and the
 * same document again is the same task; it reads a channel's telephone line (who is
 * on it, their state, the policy) as the gateway does; and each error a caller must handle happens
 * to it once: an expired token (UNAUTHENTICATED, no retry), the wrong-passphrase
 * limit (RESOURCE_EXHAUSTED, it waits retry_after_seconds), Redis down
 * (UNAVAILABLE, it backs off and retries with the same idempotency key: one
 * task), a cut watch (it reconnects) and the whiteboard not set up
 * (PERMISSION_DENIED, no retry).
 */
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, expect, test } from "vitest";
import { ROOT } from "../harness/build-dist.js";
import {
  GUESS_LIMIT,
  GUESS_WINDOW_SECONDS,
  type LiveBoardline,
  startLiveBoardline,
} from "../harness/live-boardline.js";
import { spawnTied } from "../harness/tied-spawn.js";

const EXAMPLE = join(ROOT, "examples", "python");
const PYTHON = "/usr/bin/python3";

/** A JSON line the program printed, with when it arrived (ms after the start). */
type Line = { event: string; at: number } & Record<string, unknown>;
interface Run {
  /** The lines so far; complete once `exited` resolves. */
  readonly lines: Line[];
  readonly exited: Promise<{ code: number | null; stderr: string }>;
  /** Resolves with the first line of `event` (and `code`, when given). */
  next(event: string, code?: string): Promise<Line>;
}

/** The Debian packages of the tools the example needs that are missing. */
function missingPackages(): string[] {
  const need: Array<[string, string[], string]> = [
    [PYTHON, ["-c", "import grpc"], "python3-grpcio"],
    [PYTHON, ["-c", "import google.protobuf"], "python3-protobuf"],
    ["protoc", ["--version"], "protobuf-compiler"],
    ["sh", ["-c", "command -v grpc_python_plugin"], "protobuf-compiler-grpc"],
  ];
  return need
    .filter(([command, args]) => {
      try {
        execFileSync(command, args, { stdio: "ignore" });
        return false;
      } catch {
        return true;
      }
    })
    .map(([, , pkg]) => pkg);
}

function runProgram(env: Record<string, string>, args: string[] = [], script = "convert.py"): Run {
  const start = Date.now();
  const proc = spawnTied(PYTHON, [join(EXAMPLE, script), ...args], {
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: Line[] = [];
  const waiters: Array<() => void> = [];
  let partial = "";
  let stderr = "";
  proc.stdout.on("data", (d) => {
    partial += String(d);
    for (let nl = partial.indexOf("\n"); nl >= 0; nl = partial.indexOf("\n")) {
      lines.push({ ...JSON.parse(partial.slice(0, nl)), at: Date.now() - start });
      partial = partial.slice(nl + 1);
    }
    for (const wake of waiters.splice(0)) wake();
  });
  proc.stderr.on("data", (d) => {
    stderr += String(d);
  });
  const exited = new Promise<{ code: number | null; stderr: string }>((resolve) =>
    proc.once("close", (code) => resolve({ code, stderr })),
  );
  const next = async (event: string, code?: string): Promise<Line> => {
    for (;;) {
      const found = lines.find((l) => l.event === event && (code === undefined || l.code === code));
      if (found) return found;
      const more = new Promise<void>((wake) => waiters.push(wake));
      const ended = await Promise.race([more.then(() => false), exited.then(() => true)]);
      if (ended && !lines.some((l) => l.event === event)) {
        throw new Error(`exited without "${event}": ${JSON.stringify(lines)} ${stderr}`);
      }
    }
  };
  return { lines, exited, next };
}

/** A document of its own for each run: the same one again would be answered with the earlier task (reused). */
let documents = 0;
const newDocument = () => `https://example.com/quarterly-review-${process.pid}-${++documents}.pdf`;

const events = (run: Run, event: string) => run.lines.filter((l) => l.event === event);
/** The i-th (from 0) line of `event`, which must be there. */
function nth(run: Run, event: string, i: number): Line {
  const line = events(run, event)[i];
  if (line === undefined) throw new Error(`no "${event}" #${i}: ${JSON.stringify(run.lines)}`);
  return line;
}

let live: LiveBoardline;
let missing: string[] = [];
beforeAll(async () => {
  missing = missingPackages();
  if (missing.length > 0) return; // each test fails, naming them (a failed beforeAll counts no failed test)
  execFileSync("sh", [join(EXAMPLE, "generate.sh")], { stdio: "inherit" });
  live = await startLiveBoardline();
});
beforeEach(() => {
  if (missing.length > 0) {
    throw new Error(`the Python example needs Debian's ${missing.join(", ")}: apt-get install ${missing.join(" ")}`);
  }
});
afterAll(() => live?.stop());

test("converts with the attendee passphrase and prints every page", async () => {
  const run = runProgram(live.env, [newDocument()]);
  expect((await run.exited).code).toBe(0);
  const accepted = nth(run, "accepted", 0);
  expect(accepted).toMatchObject({ status: "Queued", reused: false, queue_position: 1 });
  const finished = nth(run, "finished", 0);
  expect(finished.task_uuid).toBe(accepted.task_uuid);
  // The watch followed the task from the queue to its end.
  expect(events(run, "progress").map((p) => p.status)).toContain("Finished");
  // The backend knows the task by its own id, which the last line names.
  expect(finished.backend_task_uuid).not.toBe(finished.task_uuid);
  const task = live.simulator.tasks().find((t) => t.uuid === finished.backend_task_uuid);
  expect(task?.pageCount).toBeGreaterThan(0);
  const pages = events(run, "page");
  expect(pages.map((p) => p.page)).toEqual(Array.from({ length: task?.pageCount ?? 0 }, (_, i) => i + 1));
  // The page images the simulator serves (as the demo's does), one per page.
  for (const p of pages) expect(p.url).toBe(`${live.simulator.url}/files/staticConvert/${task?.uuid}/${p.page}.png`);
  expect(events(run, "retry")).toEqual([]);

  // The same document again: the same task, already finished, and the backend is not asked again.
  const tasksBefore = live.simulator.tasks().length;
  const again = runProgram(live.env, [String(task?.resource)]);
  expect((await again.exited).code).toBe(0);
  expect(nth(again, "accepted", 0)).toMatchObject({ task_uuid: accepted.task_uuid, reused: true, status: "Finished" });
  expect(events(again, "page")).toHaveLength(pages.length);
  expect(live.simulator.tasks()).toHaveLength(tasksBefore);
});

/** The gateway's report of one participant, over JSON. */
async function report(uid: string, sequence: number, change: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${live.url}/v1/channel/pstn/line:report`, {
    method: "POST",
    headers: { authorization: `Bearer ${live.tokens.gateway}`, "content-type": "application/json" },
    body: JSON.stringify({ channel_id: live.channel, uid, sequence: String(sequence), ...change }),
  });
  expect(res.status).toBe(200);
}

test("reads the channel's line as the gateway: who is on it, their mute, caller id and hand, and the policy", async () => {
  await report("pstn-py-1", 1, { join: { caller_id: "***1234" } });
  await report("pstn-py-2", 1, { join: { caller_id: "" } });
  await report("pstn-py-2", 2, { hand: { raised: true } });
  await report("pstn-py-2", 3, { keypad_mute: { mute: true } });
  await report("pstn-py-3", 1, { join: {} });
  await report("pstn-py-3", 2, { leave: {} });
  const run = runProgram(live.env, [], "roster.py");
  const { code, stderr } = await run.exited;
  expect(code, `${JSON.stringify(run.lines)} ${stderr}`).toBe(0);
  const byUid = new Map(events(run, "participant").map((p) => [p.uid, p]));
  expect(byUid.get("pstn-py-1")).toMatchObject({
    on_line: true,
    mute: false,
    caller_id: "***1234",
    hand_raised: false,
    joined_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
  });
  expect(byUid.get("pstn-py-2")).toMatchObject({
    on_line: true,
    mute: true,
    setter: "PSTN_SETTER_SELF",
    hand_raised: true,
  });
  // Gone, and never muted: the roster lists those on the line and those whose mute state was ever set.
  expect(byUid.has("pstn-py-3")).toBe(false);
  expect(events(run, "roster")).toEqual([
    expect.objectContaining({
      channel_id: live.channel,
      on_line: 2,
      hands_raised: 1,
      mute_on_join: false,
      allow_self_unmute: true,
    }),
  ]);
  expect(events(run, "retry")).toEqual([]);
});

test("UNAUTHENTICATED: an expired token is not retried; it says to get a fresh token", async () => {
  const run = runProgram({ ...live.env, BOARDLINE_TOKEN: await live.token({ expSeconds: -60 }) });
  expect((await run.exited).code).toBe(1);
  expect(events(run, "call")).toHaveLength(1);
  expect(events(run, "failed")).toEqual([
    expect.objectContaining({
      code: "UNAUTHENTICATED",
      error_code: "401",
      advice: expect.stringMatching(/fresh token/),
    }),
  ]);
});

test("RESOURCE_EXHAUSTED: after too many wrong passphrases it waits retry_after_seconds, then converts", async () => {
  const token = await live.token({ subject: "python-guesser" });
  for (let i = 0; i < GUESS_LIMIT; i++) {
    const res = await fetch(`${live.url}/v1/channel/pstn/mute`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ uid: "pstn-1", passphrase: "wrong-passphrase", mute: true }),
    });
    expect(res.status).toBe(403);
  }
  const run = runProgram({ ...live.env, BOARDLINE_TOKEN: token }, [newDocument(), "--role", "host"]);
  const retry = await run.next("retry", "RESOURCE_EXHAUSTED");
  const after = Number(retry.retry_after_seconds);
  expect(after).toBeGreaterThanOrEqual(1);
  expect(after).toBeLessThanOrEqual(GUESS_WINDOW_SECONDS);
  const accepted = await run.next("accepted");
  // It waited the whole retry_after_seconds (plus at most 0.5 s of jitter) before the call that succeeded.
  const secondCall = nth(run, "call", 1);
  expect(secondCall.at - retry.at).toBeGreaterThanOrEqual(after * 1000 - 50);
  expect(secondCall.at - retry.at).toBeLessThan(after * 1000 + 1000);
  expect(accepted.at).toBeGreaterThanOrEqual(after * 1000);
  expect((await run.exited).code).toBe(0);
});

test("UNAVAILABLE: with Redis down it backs off and retries with the same key; one task is started", async () => {
  const tasksBefore = live.simulator.tasks().length;
  live.redisDown();
  const run = runProgram(live.env, [newDocument()]);
  try {
    await run.next("retry", "UNAVAILABLE");
    await new Promise((r) => setTimeout(r, 1000));
  } finally {
    await live.redisUp(); // even when the program failed, for the tests after this one
  }
  const accepted = await run.next("accepted");
  expect((await run.exited).code).toBe(0);
  const retries = events(run, "retry").filter((l) => l.method === "ConvertFile");
  expect(retries.length).toBeGreaterThanOrEqual(2);
  for (const r of retries) expect(r.code).toBe("UNAVAILABLE");
  // Exponential: each wait is between half and all of a ceiling that doubles, so none is shorter than the one before.
  const waits = retries.map((r) => Number(r.wait_seconds));
  expect(waits).toEqual([...waits].sort((a, b) => a - b));
  expect(waits[0]).toBeLessThanOrEqual(0.1);
  const keys = new Set(events(run, "call").map((c) => c.idempotency_key));
  expect(keys).toEqual(new Set([accepted.idempotency_key]));
  const created = live.simulator.tasks().slice(tasksBefore);
  expect(events(run, "finished")).toHaveLength(1);
  expect(created.map((t) => t.uuid)).toEqual([nth(run, "finished", 0).backend_task_uuid]);
});

test("a watch cut by the network is reconnected and followed to the end", async () => {
  const run = runProgram(live.env, [newDocument()]);
  await run.next("progress");
  live.cutConnections();
  expect((await run.exited).code).toBe(0);
  expect(events(run, "retry")).toEqual([expect.objectContaining({ method: "WatchConversion", code: "UNAVAILABLE" })]);
  expect(events(run, "finished")).toHaveLength(1);
});

// Last: it clears the project's whiteboard settings, which the harness cannot set back.
test("PERMISSION_DENIED: without the whiteboard set up it is not retried", async () => {
  const cleared = await fetch(`${live.url}/v1/whiteboard/settings`, {
    method: "DELETE",
    headers: { authorization: `Bearer ${live.tokens.admin}` },
  });
  expect(cleared.status).toBe(200);
  const run = runProgram(live.env);
  expect((await run.exited).code).toBe(1);
  expect(events(run, "call")).toHaveLength(1);
  expect(events(run, "failed")).toEqual([
    expect.objectContaining({
      code: "PERMISSION_DENIED",
      error_code: "403",
      advice: expect.stringMatching(/operator/),
    }),
  ]);
});
