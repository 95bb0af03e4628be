/**
 * The conversions mode's watchers: BENCH_WATCHERS (default 2 000) concurrent
 * WatchConversion streams on one boardline instance, and how long the last of
 * them takes to hear that its task finished. Run by bench/run.sh (pinned to
 * the load generator's CPU); writes one JSON document to $BENCH_WORK/watchers.json
 * for bench/report/requests.mjs.
 *
 * What runs, all on loopback:
 *   - a conversion simulator forked from this process (bench/lib/watch-simulator.mjs),
 *     which tells each task's `endsAt`: the first instant its own schedule
 *     answers Finished (SimulatedTask.endsAt);
 *   - per poll setting ("short": CONVERSION_POLL_FIRST_MS = CONVERSION_POLL_MAX_MS
 *     = 100; "default": the documented defaults), a boardline of its own
 *     (dist/src/main.js, pinned to the servers' CPU, on the bench's Redis under a
 *     key prefix of its own, MAX_WATCHES = the number of watchers, so a watch
 *     slot that leaks makes the next round fail with 429);
 *   - the watchers, half server-sent events over HTTP/1.1 (one socket each,
 *     `GET …/watch`), half gRPC server streams (@connectrpc/connect-node) over
 *     HTTP/2 sessions of at most 200 streams each (the server allows 256).
 *
 * Rounds, after a warm-up: a hold round (first setting only): every watcher on
 * one slow task, which changes nothing for a minute — boardline's RSS and live
 * heap before, with the SSE half and with all (memory per watcher), then every
 * watcher disconnects at once: boardline's sockets must close, its heap shrink
 * back and every slot be free for all the watchers to attach again at once;
 * BENCH_WATCH_ROUNDS rounds of 20 tasks × (watchers ÷ 20) watchers per setting;
 * and (first setting only) 3 rounds with every watcher on one task. Each task is created through
 * ConvertFile (JSON); every watcher is attached (has its first message) before
 * any task ends, else the task is counted as "late" and left out of the delays.
 *
 * Per task: endsAt (simulator) → saved (the Finished record's updated_at, taken
 * by boardline's follower when the backend answered) → first watcher → last
 * watcher (receive times in this process).
 *
 * Environment: BENCH_WORK (jwt.txt; output), REDIS_URL, JWT_SECRET,
 * BENCH_SERVER_CPU (pin boardline there; empty: no pinning), BENCH_PIDFILE
 * (kept listing the children still running, for run.sh's clean-up), BENCH_WATCHERS,
 * BENCH_WATCH_ROUNDS, BENCH_WATCH_SETTINGS ("short default"), NODE_FLAGS.
 */
import { fork, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { Redis } from "ioredis";
import { freePort } from "../lib/processes.mjs";
import { sseEvents, within } from "../lib/watch-clients.mjs";
import { createLogger, createRedisStore, createSdkToken, loadSecretsKeys } from "../lib/boardline.mjs";
import { DEVELOPMENT_KEYS } from "../lib/development-keys.mjs";
import { WhiteboardService } from "../lib/protos.mjs";

const env = process.env;
const WORK = env.BENCH_WORK ?? "";
const REDIS_URL = env.REDIS_URL ?? "";
if (!WORK || !REDIS_URL || !env.JWT_SECRET) throw new Error("BENCH_WORK, REDIS_URL and JWT_SECRET are required");
const WATCHERS = Number(env.BENCH_WATCHERS ?? 2000);
const ROUNDS = Number(env.BENCH_WATCH_ROUNDS ?? 5);
const SETTINGS = (env.BENCH_WATCH_SETTINGS ?? "short default").split(/\s+/).filter(Boolean);
const TASKS = 20;
if (!(WATCHERS >= 2 * TASKS && WATCHERS % (2 * TASKS) === 0) || !(ROUNDS >= 1)) {
  throw new Error(`BENCH_WATCHERS must be a multiple of ${2 * TASKS}, BENCH_WATCH_ROUNDS at least 1`);
}
/** One simulator step; a task is Finished 4 steps (Waiting + 3 pages) after creation. */
const PROGRESS_MS = 2500;
/** Tasks of a round are created this far apart, so their ends meet the follower's and the hub's timers at different phases. */
const STAGGER_MS = 41;
const STREAMS_PER_SESSION = 200;
const ATTACH_CONCURRENCY = 64;
const POLL_SETTINGS = {
  short: { CONVERSION_POLL_FIRST_MS: "100", CONVERSION_POLL_MAX_MS: "100" },
  default: {},
};
const JWT = readFileSync(join(WORK, "jwt.txt"), "utf8").trim();
const AUTH = `Bearer ${JWT}`;
const SDK_TOKEN = createSdkToken({
  accessKey: `bench-${randomBytes(4).toString("hex")}`,
  secretKey: randomBytes(24).toString("base64url"),
  role: "writer",
});

const now = () => performance.timeOrigin + performance.now();
const log = (text) => process.stderr.write(`[watchers ${new Date().toISOString().slice(11, 19)}] ${text}\n`);

// --- child processes -----------------------------------------------------------------

const children = new Set();
/** BENCH_PIDFILE always lists the children still running (none once they have all ended), for run.sh's clean-up. */
const listChildren = () =>
  env.BENCH_PIDFILE && writeFileSync(env.BENCH_PIDFILE, [...children].map((c) => `${c.pid}\n`).join(""));
function track(child) {
  children.add(child);
  listChildren();
  child.once("exit", () => {
    children.delete(child);
    listChildren();
  });
  return child;
}
function killChildren() {
  for (const child of children) child.kill("SIGTERM");
}
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.once(signal, () => {
    killChildren();
    process.exit(signal === "SIGINT" ? 130 : 143);
  });
}

async function startSimulator() {
  const child = track(
    fork(new URL("../lib/watch-simulator.mjs", import.meta.url), [], {
      env: { ...env, SIM_SDK_TOKEN: SDK_TOKEN, SIM_PROGRESS_MS: String(PROGRESS_MS) },
      stdio: ["ignore", "ignore", openSync(join(WORK, "watch-simulator.log"), "a"), "ipc"],
    }),
  );
  let url = "";
  /** @type {Promise<void>} */
  const ready = new Promise((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`watch-simulator exited (${code})`)));
    child.on("message", (/** @type {{ ready?: string }} */ m) => {
      if (!m.ready) return;
      url = m.ready;
      resolve();
    });
  });
  if (!(await within(ready, 15_000))) throw new Error("watch-simulator did not start within 15 s");
  let nextId = 0;
  const pending = new Map();
  child.on("message", (m) => {
    pending.get(m.id)?.(m.tasks);
    pending.delete(m.id);
  });
  return {
    url,
    /** uuid → endsAt (ms since the epoch), from the simulator's own schedule. */
    async endsAt() {
      const id = ++nextId;
      /** @type {{ uuid: string, endsAt: number }[]} */
      let tasks = [];
      /** @type {Promise<void>} */
      const answered = new Promise((resolve) => {
        pending.set(id, (/** @type {typeof tasks} */ t) => {
          tasks = t;
          resolve();
        });
        child.send({ id, ask: "tasks" });
      });
      if (!(await within(answered, 10_000))) throw new Error("watch-simulator did not answer within 10 s");
      return new Map(tasks.map((t) => [t.uuid, t.endsAt]));
    },
    stop: () => child.disconnect(),
  };
}

async function seed(prefix) {
  const passphrase = `watch-host-${randomBytes(8).toString("hex")}`;
  const store = createRedisStore(
    { mode: "single", url: REDIS_URL },
    { keyPrefix: prefix, logger: createLogger("warn"), secretsKeys: loadSecretsKeys(env) },
  );
  await store.waitUntilReady();
  await store.createChannel({ project: "bench-proj", channel: "watch-chan", hostPassphrase: passphrase });
  await store.setWhiteboard("bench-proj", { region: "us-sv", credentials: { sdkToken: SDK_TOKEN } });
  await store.close();
  return passphrase;
}

async function startBoardline(name, prefix, simulatorUrl, pollEnv) {
  const port = await freePort();
  const flags = (env.NODE_FLAGS ?? JSON.parse(readFileSync("package.json", "utf8")).config.nodeFlags)
    .split(/\s+/)
    .filter(Boolean);
  // --expose-gc and bench/lib/gc-probe.cjs only let memory() read the live heap after a full GC.
  const argv = [process.execPath, ...flags, "--expose-gc", "-r", "./bench/lib/gc-probe.cjs", "dist/src/main.js"];
  const [cmd, ...args] = env.BENCH_SERVER_CPU ? ["taskset", "-c", env.BENCH_SERVER_CPU, ...argv] : argv;
  const logFile = join(WORK, `${name}.log`);
  const child = track(
    spawn(cmd, args, {
      env: {
        ...env,
        ...pollEnv,
        NODE_ENV: "production",
        // Production requires the keys; the development ones are those the bench's own store writes with.
        ...DEVELOPMENT_KEYS,
        PORT: String(port),
        // Any free port: not the fixed default, which a server still stopping may hold.
        METRICS_PORT: "0",
        HOST: "127.0.0.1",
        LOG_LEVEL: "warn",
        GUESS_LIMIT: "0",
        REDIS_KEY_PREFIX: prefix,
        CONVERSION_API_BASE: simulatorUrl,
        MAX_WATCHES: String(WATCHERS),
        MAX_WATCHES_PER_PROJECT: String(WATCHERS), // every watcher is one project's
        BENCH_GC_PROBE_OUT: join(WORK, `${name}.memory.json`),
      },
      stdio: ["ignore", openSync(logFile, "a"), openSync(logFile, "a")],
    }),
  );
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (child.exitCode !== null)
      throw new Error(`${name} exited at start-up: ${readFileSync(logFile, "utf8").slice(-500)}`);
    const ok = await fetch(`${url}/readyz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (i > 150) throw new Error(`${name} not ready after 15 s`);
    await sleep(100);
  }
  return {
    name,
    url,
    pid: child.pid,
    probeFile: join(WORK, `${name}.memory.json`),
    async stop() {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      if (!(await within(exited, 10_000))) {
        child.kill("SIGKILL");
        await exited;
      }
    },
  };
}

// --- measurements of the server process --------------------------------------------------

function procKb(pid, key) {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith(`${key}:`));
  return Number(line?.split(/\s+/)[1]);
}
const openFds = (pid) => readdirSync(`/proc/${pid}/fd`).length;
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.floor((s.length - 1) / 2)];
};
/** VmRSS in kB: the median of 5 readings 200 ms apart (GC moves it between readings). */
async function rssKb(pid) {
  const readings = [];
  for (let i = 0; i < 5; i++) {
    readings.push(procKb(pid, "VmRSS"));
    if (i < 4) await sleep(200);
  }
  return median(readings);
}

/** RSS as it is, then the live heap after two full GCs (bench/lib/gc-probe.cjs), in kB. */
async function memory(bl) {
  const rss = await rssKb(bl.pid);
  rmSync(bl.probeFile, { force: true });
  process.kill(bl.pid, "SIGUSR2");
  for (let i = 0; i < 100 && !existsSync(bl.probeFile); i++) await sleep(50);
  const usage = existsSync(bl.probeFile) ? JSON.parse(readFileSync(bl.probeFile, "utf8")) : {};
  return { rss, heapUsed: usage.heapUsed / 1024, external: usage.external / 1024 };
}

const probe = new Redis(REDIS_URL, { connectionName: "bench-probe", maxRetriesPerRequest: 1, commandTimeout: 5000 });
/** Redis connections named "boardline" (every boardline process's), and all of Redis's clients. */
async function redisClients() {
  const list = String(await probe.client("LIST"))
    .split("\n")
    .filter((l) => l.trim() !== "");
  return { boardline: list.filter((l) => / name=boardline /.test(l)).length, all: list.length };
}
async function redisCalls(command) {
  const stats = await probe.info("commandstats");
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
}

// --- the requests ----------------------------------------------------------------------

async function convert(bl, passphrase, resource = "https://example.com/bench/watched-deck.pptx") {
  const res = await fetch(`${bl.url}/v1/whiteboard/fileconvert`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: AUTH },
    body: JSON.stringify({ resource_url: resource, passphrase, conversion_type: "static" }),
    signal: AbortSignal.timeout(10_000),
  });
  const body = /** @type {{ task_uuid: string }} */ (await res.json());
  if (res.status !== 200) throw new Error(`ConvertFile answered ${res.status}: ${JSON.stringify(body)}`);
  return body.task_uuid;
}

async function cancel(bl, uuid) {
  await fetch(`${bl.url}/v1/whiteboard/fileconvert/${uuid}`, {
    method: "DELETE",
    headers: { authorization: AUTH },
    signal: AbortSignal.timeout(10_000),
  });
}

/**
 * One WatchConversion stream: the messages it received, and how it ended.
 * @typedef {{ kind: string, uuid: string, messages: { status: unknown, updatedAt: number, at: number }[],
 *   error: string | undefined, aborted: boolean, attached: Promise<void>, markAttached: () => void,
 *   done: Promise<void>, abort: () => void }} Watcher
 */

/**
 * @param {string} kind
 * @param {string} uuid
 * @returns {Watcher}
 */
function watcher(kind, uuid) {
  /** @type {Watcher} */
  const w = {
    kind,
    uuid,
    messages: [],
    error: undefined,
    aborted: false,
    attached: Promise.resolve(),
    markAttached: () => {},
    done: Promise.resolve(),
    abort: () => {},
  };
  w.attached = new Promise((resolve) => {
    w.markAttached = resolve;
  });
  return w;
}

/** Server-sent events over HTTP/1.1, on a socket of its own. */
function sseWatcher(bl, uuid) {
  const w = watcher("sse", uuid);
  w.done = new Promise((resolve) => {
    const finish = (/** @type {string | undefined} */ error) => {
      if (error !== undefined && w.error === undefined && !w.aborted) w.error = error;
      w.markAttached();
      resolve();
    };
    const req = http.get(
      `${bl.url}/v1/whiteboard/fileconvert/${uuid}/watch`,
      { agent: false, headers: { authorization: AUTH } },
      (res) => {
        const unparsed = sseEvents(res, now, ({ lines, data, at }) => {
          if (res.statusCode !== 200 || lines.includes("event: error")) w.error ??= `${res.statusCode} ${data}`;
          else if (data !== undefined) {
            const m = JSON.parse(data);
            w.messages.push({ status: m.status, updatedAt: Date.parse(m.updated_at), at });
            w.markAttached();
          }
        });
        res.on("end", () =>
          finish(res.statusCode === 200 ? undefined : `HTTP ${res.statusCode} ${unparsed().slice(0, 200)}`),
        );
        res.on("close", () => finish(res.complete ? undefined : "the response was cut short"));
      },
    );
    req.on("error", (e) => finish(e.message));
    w.abort = () => {
      w.aborted = true;
      req.destroy();
    };
  });
  return w;
}

const tsMs = (t) => (t === undefined ? Number.NaN : Number(t.seconds) * 1000 + t.nanos / 1e6);

/** A gRPC server stream over one of the HTTP/2 sessions. */
function grpcWatcher(client, uuid) {
  const w = watcher("grpc", uuid);
  const controller = new AbortController();
  w.abort = () => {
    w.aborted = true;
    controller.abort();
  };
  w.done = (async () => {
    try {
      for await (const c of client.watchConversion(
        { taskUuid: uuid },
        { headers: { authorization: AUTH }, signal: controller.signal },
      )) {
        w.messages.push({ status: c.status, updatedAt: tsMs(c.updatedAt), at: now() });
        w.markAttached();
      }
    } catch (e) {
      if (!w.aborted) w.error = e instanceof Error ? `${"code" in e ? e.code : ""} ${e.message}` : String(e);
    }
    w.markAttached();
  })();
  return w;
}

/**
 * Starts the watchers `ATTACH_CONCURRENCY` at a time, each once the one before has its first message or
 * failed; one without its first message after 30 s is given up (an error).
 */
async function attachAll(makers) {
  const watchers = [];
  let next = 0;
  const worker = async () => {
    while (next < makers.length) {
      const w = makers[next++]();
      watchers.push(w);
      if (!(await within(w.attached, 30_000))) {
        w.error ??= "no first message within 30 s";
        w.abort();
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(ATTACH_CONCURRENCY, makers.length) }, worker));
  return watchers;
}

function grpcClients(bl, streams) {
  const managers = Array.from(
    { length: Math.ceil(streams / STREAMS_PER_SESSION) },
    () => new Http2SessionManager(bl.url),
  );
  const clients = managers.map((sessionManager) =>
    createClient(WhiteboardService, createGrpcTransport({ baseUrl: bl.url, sessionManager })),
  );
  return {
    clients,
    close() {
      for (const m of managers) m.abort();
    },
  };
}

// --- rounds ------------------------------------------------------------------------------

const percentile = (xs, p) => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};
const spread = (xs) => ({ n: xs.length, p50: percentile(xs, 50), p99: percentile(xs, 99), max: percentile(xs, 100) });

/** Creates `tasks` tasks and attaches `perTask` watchers to each (half SSE, half gRPC); waits for every end. */
async function watchRound(ctx, { tasks, perTask }) {
  const { bl, sim, passphrase } = ctx;
  const uuids = [];
  for (let i = 0; i < tasks; i++) {
    uuids.push(await convert(bl, passphrase));
    if (i < tasks - 1) await sleep(STAGGER_MS);
  }
  const ends = await sim.endsAt();
  const half = perTask / 2;
  const grpc = grpcClients(bl, tasks * half);
  const attachStart = now();
  const sse = await attachAll(uuids.flatMap((u) => Array.from({ length: half }, () => () => sseWatcher(bl, u))));
  let i = 0;
  const streams = await attachAll(
    uuids.flatMap((u) =>
      Array.from({ length: half }, () => () => grpcWatcher(grpc.clients[i++ % grpc.clients.length], u)),
    ),
  );
  const attachedAt = now();
  const all = [...sse, ...streams];
  const during = { redis: await redisClients(), fds: openFds(bl.pid), hgetall: await redisCalls("hgetall"), at: now() };
  const lastEnd = Math.max(...uuids.map((u) => ends.get(u)));
  const settled = await within(Promise.all(all.map((w) => w.done)), Math.max(0, lastEnd - now()) + 30_000);
  const ended = now();
  const hgetallPerSecond = ((await redisCalls("hgetall")) - during.hgetall) / ((ended - during.at) / 1000);
  if (!settled) for (const w of all) w.abort();
  grpc.close();
  return {
    tasks: uuids.map((u) =>
      taskResult(
        u,
        ends.get(u),
        all.filter((w) => w.uuid === u),
      ),
    ),
    watchers: all.length,
    attachMs: attachedAt - attachStart,
    firstEndAfterAttachMs: Math.min(...uuids.map((u) => ends.get(u))) - attachedAt,
    errors: summarizeErrors(all),
    timedOut: !settled,
    redisDuring: during.redis,
    fdsDuring: during.fds,
    hgetallPerSecond,
    perWatcher: perWatcherDelays(all, ends),
  };
}

function summarizeErrors(watchers) {
  const counts = {};
  for (const w of watchers)
    if (w.error !== undefined) counts[w.error.slice(0, 120)] = (counts[w.error.slice(0, 120)] ?? 0) + 1;
  return counts;
}

/** The task's path from the simulator's end to its last watcher; `late` if a watcher's first message was already the end. */
function taskResult(uuid, endsAt, watchers) {
  const finished = watchers.map((w) => w.messages.find((m) => m.status === "Finished"));
  const received = finished.filter((m) => m !== undefined).map((m) => m.at);
  const late = watchers.filter((w) => w.messages[0]?.status === "Finished").length;
  const lastOf = (kind) =>
    Math.max(
      ...watchers.filter((w, i) => w.kind === kind && finished[i] !== undefined).map((w) => w.messages.at(-1).at),
    );
  const missing = finished.filter((m) => m === undefined).length;
  const savedAt = finished.find((m) => m !== undefined)?.updatedAt ?? Number.NaN;
  const first = Math.min(...received);
  const last = Math.max(...received);
  return {
    uuid,
    valid: late === 0 && missing === 0,
    late,
    missing,
    endsAt,
    followerMs: savedAt - endsAt,
    hubMs: first - savedAt,
    fanOutMs: last - first,
    totalMs: last - endsAt,
    sseLastMs: lastOf("sse") - endsAt,
    grpcLastMs: lastOf("grpc") - endsAt,
    messagesPerWatcher: median(watchers.map((w) => w.messages.length)),
  };
}

function perWatcherDelays(watchers, ends) {
  const by = { sse: [], grpc: [] };
  for (const w of watchers) {
    const m = w.messages.find((x) => x.status === "Finished");
    if (m !== undefined && w.messages[0]?.status !== "Finished") by[w.kind].push(m.at - ends.get(w.uuid));
  }
  return { sse: spread(by.sse), grpc: spread(by.grpc) };
}

/**
 * Every watcher on one slow task (no state change for a minute, so nothing ends while measuring): boardline's
 * memory before, with the SSE half, with all; then all of them go away at once, and boardline must let go of
 * their sockets, slots and memory — attaching them all again at once proves the slots (MAX_WATCHES = WATCHERS).
 */
async function holdRound(ctx) {
  const { bl, passphrase } = ctx;
  const uuid = await convert(bl, passphrase, "https://example.com/bench/slow-deck.pptx");
  const fdsBefore = openFds(bl.pid);
  const mem = { before: await memory(bl) };
  const grpc = grpcClients(bl, WATCHERS / 2);
  let i = 0;
  const sse = await attachAll(Array.from({ length: WATCHERS / 2 }, () => () => sseWatcher(bl, uuid)));
  mem.withSse = await memory(bl);
  const streams = await attachAll(
    Array.from({ length: WATCHERS / 2 }, () => () => grpcWatcher(grpc.clients[i++ % grpc.clients.length], uuid)),
  );
  mem.withAll = await memory(bl);
  const first = [...sse, ...streams];
  const fdsDuring = openFds(bl.pid);
  const redisDuring = await redisClients();
  const attachedFirst = first.filter((w) => w.error === undefined).length;
  const errorsFirst = summarizeErrors(first);
  const left = now();
  for (const w of first) w.abort();
  grpc.close();
  const gone = await within(Promise.all(first.map((w) => w.done)), 10_000);
  let fdsAfter = openFds(bl.pid);
  while (fdsAfter > fdsBefore + 2 && now() - left < 10_000) {
    await sleep(20);
    fdsAfter = openFds(bl.pid);
  }
  const releaseMs = now() - left;
  mem.afterLeaving = await memory(bl);
  // At once again: with MAX_WATCHES = WATCHERS, every slot not given back is a 429 here.
  const grpcAgain = grpcClients(bl, WATCHERS / 2);
  const again = await attachAll(
    Array.from({ length: WATCHERS }, (_, n) =>
      n % 2 === 0
        ? () => sseWatcher(bl, uuid)
        : () => grpcWatcher(grpcAgain.clients[i++ % grpcAgain.clients.length], uuid),
    ),
  );
  const attachedAgain = again.filter((w) => w.error === undefined).length;
  const errorsAgain = summarizeErrors(again);
  for (const w of again) w.abort();
  grpcAgain.close();
  const goneAgain = await within(Promise.all(again.map((w) => w.done)), 10_000);
  await cancel(bl, uuid);
  return {
    mem,
    redisDuring,
    fdsBefore,
    fdsDuring,
    fdsAfter,
    releaseMs,
    attachedFirst,
    errorsFirst,
    attachedAgain,
    errorsAgain,
    clientsClosed: gone && goneAgain,
  };
}

function summarize(rounds) {
  const tasks = rounds.flatMap((r) => r.tasks);
  const valid = tasks.filter((t) => t.valid);
  const pick = (key) => spread(valid.map((t) => t[key]));
  const watcherDelays = (kind) => ({
    p50: median(rounds.map((r) => r.perWatcher[kind].p50)),
    p99: median(rounds.map((r) => r.perWatcher[kind].p99)),
  });
  return {
    tasks: tasks.length,
    valid: valid.length,
    late: tasks.filter((t) => t.late > 0).length,
    missing: tasks.reduce((n, t) => n + t.missing, 0),
    totalMs: pick("totalMs"),
    followerMs: pick("followerMs"),
    hubMs: pick("hubMs"),
    fanOutMs: pick("fanOutMs"),
    sseLastMs: pick("sseLastMs"),
    grpcLastMs: pick("grpcLastMs"),
    perWatcher: { sse: watcherDelays("sse"), grpc: watcherDelays("grpc") },
    attachMs: spread(rounds.map((r) => r.attachMs)),
    firstEndAfterAttachMs: Math.min(...rounds.map((r) => r.firstEndAfterAttachMs)),
    hgetallPerSecond: median(rounds.map((r) => r.hgetallPerSecond)),
    errors: rounds.map((r) => r.errors).filter((e) => Object.keys(e).length > 0),
    timedOut: rounds.filter((r) => r.timedOut).length,
  };
}

async function runSetting(sim, setting) {
  const prefix = `blw-${setting}:`;
  const passphrase = await seed(prefix);
  const redisBefore = await redisClients();
  const bl = await startBoardline(`boardline-watch-${setting}`, prefix, sim.url, POLL_SETTINGS[setting]);
  const ctx = { bl, sim, passphrase };
  const out = { setting, pollEnv: POLL_SETTINGS[setting], redisBefore };
  try {
    out.redisIdle = await redisClients();
    out.fdsIdle = openFds(bl.pid);
    log(`${setting}: warm-up round (1 task × ${2 * TASKS} watchers)`);
    await watchRound(ctx, { tasks: 1, perTask: 2 * TASKS });
    if (setting === SETTINGS[0]) {
      out.hold = await holdRound(ctx);
      const { mem, ...rest } = out.hold;
      log(`${setting}: hold round ${JSON.stringify(rest)}`);
    }
    const rounds = [];
    for (let r = 1; r <= ROUNDS; r++) {
      rounds.push(await watchRound(ctx, { tasks: TASKS, perTask: WATCHERS / TASKS }));
      const last = rounds[rounds.length - 1];
      if (last === undefined) continue;
      log(
        `${setting}: round ${r}/${ROUNDS}, ${TASKS} tasks × ${WATCHERS / TASKS}: attached in ${last.attachMs.toFixed(0)} ms, ` +
          `last watcher ${last.tasks.map((t) => t.totalMs.toFixed(0)).join(" ")} ms after the end` +
          `${Object.keys(last.errors).length > 0 ? `; errors ${JSON.stringify(last.errors)}` : ""}`,
      );
    }
    out.rounds = summarize(rounds);
    out.redisDuring = rounds[0]?.redisDuring;
    out.fdsDuring = rounds[0]?.fdsDuring;
    if (setting === SETTINGS[0]) {
      const one = [];
      for (let r = 1; r <= 3; r++) {
        const round = await watchRound(ctx, { tasks: 1, perTask: WATCHERS });
        one.push(round);
        log(
          `${setting}: one task × ${WATCHERS}, round ${r}/3: last watcher ${round.tasks[0]?.totalMs.toFixed(0)} ms after the end`,
        );
      }
      out.oneTask = summarize(one);
    }
    await sleep(500);
    out.redisAfter = await redisClients();
    out.fdsAfter = openFds(bl.pid);
    out.rssAfterKb = procKb(bl.pid, "VmRSS");
    out.rssPeakKb = procKb(bl.pid, "VmHWM");
  } finally {
    await bl.stop();
  }
  return out;
}

const started = now();
const sim = await startSimulator();
const results = {
  watchers: WATCHERS,
  tasksPerRound: TASKS,
  rounds: ROUNDS,
  progressMs: PROGRESS_MS,
  staggerMs: STAGGER_MS,
  /** @type {Awaited<ReturnType<typeof runSetting>>[]} */
  settings: [],
};
try {
  for (const setting of SETTINGS) {
    if (!(setting in POLL_SETTINGS)) throw new Error(`unknown BENCH_WATCH_SETTINGS entry ${setting}`);
    results.settings.push(await runSetting(sim, setting));
  }
} finally {
  sim.stop();
  probe.disconnect();
  killChildren();
}
results.elapsedMs = now() - started;
writeFileSync(join(WORK, "watchers.json"), `${JSON.stringify(results, null, 2)}\n`);
log(`done in ${(results.elapsedMs / 1000).toFixed(0)} s`);
