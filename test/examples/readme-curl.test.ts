/**
 * Every `curl` example of the fenced `sh` blocks of README.md and docs/*.md,
 * run in their order (README.md first, then docs/ by name) with the real curl
 * binary against startLiveBoardline(): the placeholders ($TOKEN, $GATEWAY,
 * $ADMIN, $TASK, $KEY, `"passphrase":"…"`, …) become live values, and the
 * answer must have the status and the shape of the `# 200 {…}` comment under
 * the command (every field it names; for server-sent events, its `id:` /
 * `data:` lines). And every route of the API tables (README.md's and
 * docs/api.md's) has such a checked example, and every JSON route of the
 * protos (the generated OpenAPI document) is in both tables.
 *
 * Every example is checked (expect.soft), so one run lists every stale comment.
 *
 * It needs curl: `apt-get install curl` (`bash .ci/run` installs it).
 */
import { randomBytes, randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { afterAll, beforeAll, expect, test } from "vitest";
import { eventually } from "../harness/eventually.js";
import { type LiveBoardline, startLiveBoardline } from "../harness/live-boardline.js";
import { spawnTied } from "../harness/tied-spawn.js";

/** The documents with examples, by path: README.md first, then docs/*.md by name. */
const DOCUMENTS: ReadonlyMap<string, string> = new Map(
  [
    "README.md",
    ...readdirSync("docs")
      .filter((name) => name.endsWith(".md"))
      .sort()
      .map((name) => `docs/${name}`),
  ].map((path) => [path, readFileSync(path, "utf8")]),
);
const API_TABLES = ["README.md", "docs/api.md"];
const DOCUMENTED_BASE = "http://127.0.0.1:8080";
const CONNECT_PATH = /http:\/\/127\.0\.0\.1:8080\/[a-z]+\.v1\.[A-Za-z]+\/[A-Za-z]+/;

interface Expected {
  readonly status?: number;
  /** The comment's text after the status (JSON with `…`), or its `id:` / `data:` lines. */
  readonly text: string;
  readonly sse: boolean;
}

interface CurlExample {
  /** Where the command is: `<document>:<line>`. */
  readonly where: string;
  readonly command: string;
  readonly expected?: Expected;
}

/** The curl commands (continuation lines joined) of the sh blocks that call a JSON route or a Connect method, with their comments. */
function curlExamples(document: string, text: string): CurlExample[] {
  const lines = text.split("\n");
  const examples: CurlExample[] = [];
  let inSh = false;
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i] ?? "";
    if (/^\s*```/.test(raw)) {
      inSh = !inSh && /^\s*```sh\s*$/.test(raw);
      continue;
    }
    if (!inSh || !raw.trim().startsWith("curl ")) continue;
    const start = i;
    // A trailing shell comment (with no quote in it) is dropped: what the test appends must not land in it.
    const code = (line: string) => line.trim().replace(/\s+#\s[^'"]*$/, "");
    let command = code(raw);
    while (command.endsWith("\\")) command = `${command.slice(0, -1).trimEnd()} ${code(lines[++i] ?? "")}`;
    const comments: string[] = [];
    while ((lines[i + 1] ?? "").trim().startsWith("#")) comments.push((lines[++i] ?? "").trim().replace(/^#\s?/, ""));
    // A JSON route (/v1/…), or a Connect call (/package.v1.Service/Method).
    if (!command.includes(`${DOCUMENTED_BASE}/v1/`) && !CONNECT_PATH.test(command)) continue;
    examples.push({
      where: `${document}:${start + 1}`,
      command,
      ...(comments.length > 0 ? { expected: expectation(comments) } : {}),
    });
  }
  return examples;
}

function expectation(comments: string[]): Expected {
  const status = /^(\d{3})\b\s*(.*)$/.exec(comments[0] ?? "");
  if (status === null) return { text: comments.join("\n"), sse: true };
  return { status: Number(status[1]), text: [status[2], ...comments.slice(1)].join(" "), sse: false };
}

/** The routes of the API table: `METHOD /path` with `{var}` for path variables. */
function apiTableRoutes(text: string): { method: string; path: string }[] {
  const routes: { method: string; path: string }[] = [];
  for (const row of text.split("\n")) {
    // "| `POST /v1/…` |", and "| `PUT` / `GET` / `DELETE /v1/…` |" for three methods on one path.
    const cell = /^\| ([A-Z /]+?) (\/v1\/[^ ?|]+)/.exec(row.replaceAll("`", ""));
    if (cell === null) continue;
    for (const method of (cell[1] ?? "").split("/").map((m) => m.trim())) routes.push({ method, path: cell[2] ?? "" });
  }
  return routes;
}

let live: LiveBoardline;
/** Tasks for $TASK: one that has Finished (GET), and a fresh one for each cancel and watch. */
let finishedTask: string;

beforeAll(async () => {
  live = await startLiveBoardline({
    env: {
      CONVERSION_POLL_FIRST_MS: "300",
      CONVERSION_POLL_MAX_MS: "300",
      // The webhook route answers only when webhooks are on; nothing listens at this base.
      CONVERSION_WEBHOOK_BASE: "http://127.0.0.1:9",
      CONVERSION_WEBHOOK_SECRET: randomBytes(32).toString("base64url"),
    },
  });
  finishedTask = await startTask();
  await eventually(async () => (await getTask(finishedTask)).status === "Finished", 10_000, "a Finished task");
});
afterAll(() => live?.stop());

async function startTask(): Promise<string> {
  const res = await fetch(`${live.url}/v1/whiteboard/fileconvert`, {
    method: "POST",
    headers: { authorization: `Bearer ${live.tokens.user}`, "content-type": "application/json" },
    body: JSON.stringify({
      resource_url: "https://example.com/deck.pdf",
      passphrase: live.hostPassphrase,
      conversion_type: "static",
    }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { task_uuid: string }).task_uuid;
}

async function getTask(task: string): Promise<{ status: string }> {
  const res = await fetch(`${live.url}/v1/whiteboard/fileconvert/${task}`, {
    headers: { authorization: `Bearer ${live.tokens.user}` },
  });
  return (await res.json()) as { status: string };
}

/** The command with live values for the documents' placeholders. */
async function withLiveValues(command: string): Promise<string> {
  let task = finishedTask;
  if (command.includes("$TASK") && (command.includes("-X DELETE") || command.includes("/watch"))) {
    task = await startTask();
  }
  const inAWeek = new Date(Date.now() + 7 * 86_400_000).toISOString().replace(/\.\d+Z$/, "Z");
  return command
    .replaceAll(DOCUMENTED_BASE, live.url)
    .replaceAll("$TOKEN", live.tokens.user)
    .replaceAll("$GATEWAY", live.tokens.gateway)
    .replaceAll("$ADMIN", live.tokens.admin)
    .replaceAll("$TASK", task)
    .replaceAll("$KEY", randomUUID())
    .replaceAll("$(uuidgen)", randomUUID())
    .replaceAll('"passphrase":"…"', `"passphrase":"${live.hostPassphrase}"`)
    .replaceAll('"secret_key":"…"', `"secret_key":"${randomBytes(24).toString("base64url")}"`)
    .replaceAll("weekly-sync", live.channel)
    .replace(/"expire_time":"[^"]+"/, `"expire_time":"${inAWeek}"`);
}

/** Runs the command in bash with curl's status appended; a stream is read for 2 s. */
function runCurl(command: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const child = spawnTied("bash", ["-c", `${command} --max-time 2 -w '\\n%{http_code}'`], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (err += d));
    child.on("error", reject);
    child.on("exit", (code) => {
      // 28: the time limit, which ends a stream; its status line is still written.
      if (code === 127) reject(new Error(`no curl: apt-get install curl (bash .ci/run installs it): ${err}`));
      if (code !== 0 && code !== 28) reject(new Error(`curl exited ${code}: ${err}`));
      const cut = out.lastIndexOf("\n");
      resolve({ status: Number(out.slice(cut + 1)), body: out.slice(0, cut) });
    });
  });
}

/** The field names a comment shows (`"name":`), which the answer must have. */
const fieldNames = (text: string) => [...text.matchAll(/"([a-z_]+)":/g)].map((m) => m[1] ?? "");

function keysOf(value: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const v of value) keysOf(v, into);
  else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      into.add(k);
      keysOf(v, into);
    }
  }
  return into;
}

function checkAnswer(example: CurlExample, answer: { status: number; body: string }): void {
  const expected = example.expected;
  const where = `${example.where} ${example.command.slice(0, 90)}`;
  if (expected === undefined || expected.sse) {
    expect.soft(answer.status, where).toBe(200);
  } else {
    expect.soft(answer.status, where).toBe(expected.status);
  }
  if (expected === undefined) return;
  if (expected.sse) {
    for (const comment of expected.text.split("\n")) {
      const field = /^(id|data): (.*)$/.exec(comment);
      if (field === null) continue;
      const lines = answer.body.split("\n").filter((l) => l.startsWith(`${field[1]}: `));
      expect.soft(lines.length, `${where}: no "${field[1]}:" line in ${answer.body}`).toBeGreaterThan(0);
      if (field[1] === "data") {
        const keys = keysOf(lines.map((l) => JSON.parse(l.slice("data: ".length)) as unknown));
        for (const name of fieldNames(field[2] ?? "")) expect.soft([...keys], where).toContain(name);
      }
    }
    return;
  }
  const body = JSON.parse(answer.body) as unknown;
  expect.soft(typeof body, where).toBe("object");
  const keys = keysOf(body);
  for (const name of fieldNames(expected.text)) expect.soft([...keys], `${where}: ${answer.body}`).toContain(name);
}

const examples = [...DOCUMENTS].flatMap(([document, text]) => curlExamples(document, text));

test.each(API_TABLES)("every route of %s's API table has a curl example with the answer it shows", (document) => {
  const routes = apiTableRoutes(DOCUMENTS.get(document) ?? "");
  const missing = routes.filter(({ method, path }) => {
    const pattern = new RegExp(
      `${path.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[a-z_]+\}/g, "[^/\\s'\"?]+")}(?:[?'"\\s]|$)`,
    );
    return !examples.some((e) => {
      const m = /-X ([A-Z]+)/.exec(e.command)?.[1] ?? (e.command.includes(" -d ") ? "POST" : "GET");
      return m === method && e.expected !== undefined && pattern.test(e.command);
    });
  });
  expect(routes.length).toBeGreaterThanOrEqual(16);
  expect(missing).toEqual([]);
});

test.each(API_TABLES)("%s's API table lists every JSON route of the protos", (document) => {
  const openapi = JSON.parse(readFileSync("openapi/boardline.v1.json", "utf8")) as {
    paths: Record<string, Record<string, unknown>>;
  };
  const listed = new Set(apiTableRoutes(DOCUMENTS.get(document) ?? "").map((r) => `${r.method} ${r.path}`));
  const routes = Object.entries(openapi.paths).flatMap(([path, methods]) =>
    Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`),
  );
  expect(routes.length).toBeGreaterThanOrEqual(16);
  expect(routes.filter((route) => !listed.has(route))).toEqual([]);
});

test("each curl example of the documents answers with the status and shape of its comment", async () => {
  expect(examples.length).toBeGreaterThanOrEqual(15);
  for (const example of examples) checkAnswer(example, await runCurl(await withLiveValues(example.command)));
}, 60_000);
