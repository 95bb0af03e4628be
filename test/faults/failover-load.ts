/**
 * The failover tests' common part (sentinel-failover.test.ts,
 * cluster-failover.test.ts): the real boardline process on a replicated Redis,
 * 8 writers muting over JSON (a fresh uid per mute) and a /readyz probe while
 * a chaos step kills the primary, then the checks every run shares and the
 * figures it reports:
 *
 * - every request is answered within ANSWER_BOUND_MS: 200, or 503 in the
 *   documented shape (nothing else);
 * - /readyz turns 503 after the kill and is 200 at the end;
 * - every mute that started RECOVERY_BOUND_MS after the deployment could take
 *   acknowledged writes again answered 200;
 * - how many mutes answered 200 are missing from the new primary (asserted 0
 *   with REDIS_MIN_REPLICAS=1; reported with 0).
 */
import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import { expect } from "vitest";
import { mintToken } from "../../src/auth/jwt.js";
import { silentLogger } from "../../src/log.js";
import { createRedisStore, type RedisConnectionOptions } from "../../src/store/redis/store.js";
import { MUTE_EVENTS_MAXLEN } from "../../src/store/schema/keys.js";
import { eventually } from "../harness/eventually.js";
import { startMainProcess } from "../harness/main-process.js";
import { withClient } from "../harness/redis-replicated.js";
import { eventsKey, muteKey } from "../harness/redis-state.js";
import { ROUTES } from "../harness/routes.js";
import { sleep } from "../harness/sleep.js";

/**
 * The documented bound on one answer while Redis fails over (docs/operations.md,
 * "Reliability"): the reads of a mute (≤ REDIS_COMMAND_TIMEOUT_MS, 1 s) and its
 * write with WAIT (≤ REDIS_COMMAND_TIMEOUT_MS + REDIS_REPLICA_TIMEOUT_MS, 1.5 s).
 */
export const ANSWER_BOUND_MS = 2500;
/** Writes are acknowledged again within this long of the deployment being able to take them. */
export const RECOVERY_BOUND_MS = 2000;

const WRITERS = 8;
const SECRET = "failover-test-secret-0123456789abcdef";
export const WORLD = { project: "p", channel: "c", passphrase: "failover host passphrase" } as const;

export interface Outcome {
  readonly uid: string;
  readonly status: number;
  readonly start: number;
  readonly end: number;
  readonly body: unknown;
}

export interface LoadRun {
  readonly outcomes: readonly Outcome[];
  readonly readiness: ReadonlyArray<{ at: number; status: number }>;
}

export interface Boardline {
  readonly url: string;
  stop(): Promise<void>;
}

/** The real process on `redisEnv`, with replicas required or not; resolves once /readyz says 200. */
export async function startBoardlineProcess(redisEnv: Record<string, string>, minReplicas: number): Promise<Boardline> {
  const started = await startMainProcess({
    ...redisEnv,
    NODE_ENV: "production",
    LOG_LEVEL: "info", // the harness learns the port from the "listening" line
    JWT_SECRET: SECRET,
    REDIS_MIN_REPLICAS: String(minReplicas),
    REDIS_REPLICA_TIMEOUT_MS: "500",
  });
  const proc: ChildProcess = started.proc;
  const stop = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = once(proc, "exit");
    proc.kill("SIGTERM");
    const timer = setTimeout(() => proc.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(timer);
  };
  try {
    await eventually(async () => (await fetch(`${started.url}/readyz`)).status === 200, 10_000, "/readyz to say 200");
  } catch (e) {
    await stop();
    throw e;
  }
  return { url: started.url, stop };
}

/**
 * 8 writers and a readiness probe, from before `chaos` starts until `tailMs`
 * after it resolved. `chaos` sees the outcomes so far, so it can wait for a
 * state of the load (e.g. a 503) instead of sleeping.
 */
export async function underLoad(
  bl: Boardline,
  chaos: (outcomes: readonly Outcome[]) => Promise<void>,
  tailMs: number,
): Promise<LoadRun> {
  const token = await mintToken({
    secret: new TextEncoder().encode(SECRET),
    project: WORLD.project,
    subject: "failover",
    ttlSeconds: 600,
  });
  const outcomes: Outcome[] = [];
  const readiness: Array<{ at: number; status: number }> = [];
  let stopAt = Number.POSITIVE_INFINITY;
  const writer = async (w: number) => {
    for (let n = 0; Date.now() < stopAt; n++) {
      const outcome = await mute(bl, token, `w${w}-${n}`);
      outcomes.push(outcome);
      if (outcome.status !== 200) await sleep(20);
    }
  };
  const probe = async () => {
    while (Date.now() < stopAt) {
      const res = await fetch(`${bl.url}/readyz`, { signal: AbortSignal.timeout(10_000) }).catch(() => undefined);
      readiness.push({ at: Date.now(), status: res?.status ?? 0 });
      await res?.arrayBuffer();
      await sleep(100);
    }
  };
  const run = async () => {
    await chaos(outcomes);
    stopAt = Date.now() + tailMs;
  };
  await Promise.all([...Array.from({ length: WRITERS }, (_, w) => writer(w)), probe(), run()]);
  return { outcomes, readiness };
}

async function mute(bl: Boardline, token: string, uid: string): Promise<Outcome> {
  const start = Date.now();
  try {
    const res = await fetch(`${bl.url}${ROUTES.mute}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ uid, passphrase: WORLD.passphrase, mute: true }),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    return { uid, status: res.status, start, end: Date.now(), body: text === "" ? undefined : JSON.parse(text) };
  } catch (e) {
    return { uid, status: 0, start, end: Date.now(), body: String(e) };
  }
}

/** The checks every failover run shares (see the file comment). `writable`: when the deployment could take writes again. */
export function expectDocumentedBehaviour(run: LoadRun, killedAt: number, writable: number): void {
  const { outcomes, readiness } = run;
  expect(outcomes.filter((o) => o.status !== 200 && o.status !== 503)).toEqual([]);
  for (const o of outcomes.filter((o) => o.status === 503)) {
    expect(o.body).toEqual({ error: { code: 503, message: expect.any(String) } });
  }
  expect(outcomes.filter((o) => o.end - o.start > ANSWER_BOUND_MS)).toEqual([]);
  // Traffic flowed before the kill, the failover was seen, and writes came back.
  expect(outcomes.filter((o) => o.status === 200 && o.end < killedAt).length).toBeGreaterThan(0);
  expect(outcomes.filter((o) => o.status === 503).length).toBeGreaterThan(0);
  const late = outcomes.filter((o) => o.start > writable + RECOVERY_BOUND_MS);
  expect(late.length).toBeGreaterThan(0);
  expect(late.filter((o) => o.status !== 200)).toEqual([]);
  expect(readiness.some((r) => r.at > killedAt && r.status === 503)).toBe(true);
  expect(readiness.at(-1)?.status).toBe(200);
}

/**
 * The mutes answered 200 whose uid is missing from the mute hash, or from the event stream read
 * from the new primary. The stream is capped (MUTE_EVENTS_MAXLEN, trimmed from its oldest end):
 * once it is that long, a mute begun before its first event may have been trimmed away, and only
 * the hash can tell whether it was kept.
 */
export function lostAcknowledged(run: LoadRun, stored: StoredMutes): Outcome[] {
  const trimmedBefore = stored.eventCount >= MUTE_EVENTS_MAXLEN ? stored.firstEventMs : Number.NEGATIVE_INFINITY;
  return run.outcomes.filter(
    (o) =>
      o.status === 200 && (stored.state[o.uid] !== "1" || (!stored.eventUids.has(o.uid) && o.start > trimmedBefore)),
  );
}

export interface StoredMutes {
  readonly state: Record<string, string>;
  readonly eventUids: ReadonlySet<string>;
  readonly eventCount: number;
  /** The time in the first event's id (the Redis clock, on this machine). */
  readonly firstEventMs: number;
}

/** One line of figures for the test's report. */
export function figures(label: string, run: LoadRun, marks: Record<string, number>, lost: number): string {
  const { outcomes, readiness } = run;
  const t0 = marks.killedAt ?? 0;
  const rel = Object.fromEntries(Object.entries(marks).map(([k, v]) => [k, v - t0]));
  const firstOkAfter = outcomes.filter((o) => o.status === 200 && o.start > t0).map((o) => o.end - t0);
  const notReady = readiness.filter((r) => r.at > t0 && r.status !== 200).map((r) => r.at - t0);
  return `${label}: ${JSON.stringify({
    requests: outcomes.length,
    ok: outcomes.filter((o) => o.status === 200).length,
    unavailable: outcomes.filter((o) => o.status === 503).length,
    slowestMs: Math.max(...outcomes.map((o) => o.end - o.start)),
    ...rel,
    firstOkAfterKillMs: Math.min(...firstOkAfter),
    notReadyMs: notReady.length === 0 ? null : [Math.min(...notReady), Math.max(...notReady)],
    acknowledgedLost: lost,
  })}`;
}

/** With replicas required, nothing is acknowledged from the kill until a new replica is being attached. */
export function expectNoAckWhileAlone(run: LoadRun, killedAt: number, attachingAt: number): void {
  const alone = run.outcomes.filter((o) => o.start > killedAt && o.end < attachingAt);
  expect(alone.length).toBeGreaterThan(0);
  expect(alone.filter((o) => o.status === 200)).toEqual([]);
}

/** The channel and its host passphrase, on the replica too before the load starts. */
export async function seed(connection: RedisConnectionOptions, keyPrefix: string): Promise<void> {
  const replicaAck = { minReplicas: 1, timeoutMs: 2000 };
  const store = createRedisStore(connection, { keyPrefix, logger: silentLogger(), commandTimeoutMs: 5000, replicaAck });
  try {
    await store.waitUntilReady(10_000);
    await store.createChannel({ ...WORLD, hostPassphrase: WORLD.passphrase });
  } finally {
    await store.close();
  }
}

/** The mute hash and the uids of the event stream, read from the node on `port`. */
export function storedOn(port: number, place: { prefix: string; world: typeof WORLD }): Promise<StoredMutes> {
  return withClient(port, async (c) => {
    const state = await c.hgetall(muteKey(place));
    const events = await c.xrange(eventsKey(place), "-", "+");
    const eventUids = new Set(events.map(([, fields]) => fields[fields.indexOf("uid") + 1] ?? ""));
    const firstEventMs = Number(events[0]?.[0].split("-")[0] ?? Number.NEGATIVE_INFINITY);
    return { state, eventUids, eventCount: events.length, firstEventMs };
  });
}
