/**
 * ChannelAdminService across three boardline processes (`node dist/src/main.js`)
 * on one 3-master Redis Cluster, PASSPHRASE_CACHE_MS = 500:
 * - RotatePassphrase while 8 clients mute with the old host passphrase through
 *   the three instances: every mute started before the rotation was sent
 *   succeeds; one in flight during the call may see either answer (the old
 *   record is released before the new passphrase is answered, and an instance
 *   whose cache entry runs out in that window reads Redis); none succeeds
 *   later than PASSPHRASE_CACHE_MS after the answer, on any instance; the new
 *   passphrase works on all three at once;
 * - a channel created with expire_time = now + 2 s stops opening on every
 *   instance within PASSPHRASE_CACHE_MS after that time, and its record and
 *   passphrase records are gone from every master (its mute hash, meta and
 *   event stream: see the expected failure at the end).
 * The figures (last accepted after the rotation's answer or the expiry, per
 * instance) are printed.
 */
import { randomBytes } from "node:crypto";
import { Cluster, Redis } from "ioredis";
import { afterAll, beforeAll, expect, test } from "vitest";
import { mintToken } from "../../src/auth/jwt.js";
import { silentLogger } from "../../src/log.js";
import { CHANNELS_ADMIN_SCOPE } from "../../src/services/ports.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis/store.js";
import { keySchema } from "../../src/store/schema/keys.js";
import { eventually } from "../harness/eventually.js";
import { type Instance, startInstances } from "../harness/instances.js";
import { type RedisClusterHandle, startRedisCluster } from "../harness/redis-topologies.js";
import { uniquePrefix } from "../harness/redis-url.js";
import { ROUTES } from "../harness/routes.js";
import { sleep } from "../harness/sleep.js";

const SECRET = "channel-rotate-instances-secret-0123456789";
const PROJECT = "meetings-project";
const CACHE_MS = 500;
/** Slack on top of the cache bound for a shared, noisy machine (the cache-bound test of many-instances uses as much). */
const MARGIN_MS = 500;
const CLIENTS = 8;
const prefix = uniquePrefix("chrotate");
const word = () => randomBytes(6).toString("hex");

let cluster: RedisClusterHandle;
let store: RedisStore;
let instances: Instance[] = [];
/** The expired channel of the expiry test, and its keys left after it. */
let expired: { channel: string; left: string[] } | undefined;

beforeAll(async () => {
  cluster = await startRedisCluster(3);
  store = createRedisStore({ mode: "cluster", nodes: cluster.seeds }, { keyPrefix: prefix, logger: silentLogger() });
  await store.waitUntilReady();
  await store.setWhiteboard(PROJECT, { region: "us-sv", credentials: { sdkToken: "NETLESSSDK_rotate" } });
  instances = await startInstances(3, {
    REDIS_CLUSTER_NODES: cluster.seeds.map((n) => `${n.host}:${n.port}`).join(","),
    REDIS_KEY_PREFIX: prefix,
    JWT_SECRET: SECRET,
    CONVERSION_API_BASE: "http://127.0.0.1:9",
    PASSPHRASE_CACHE_MS: String(CACHE_MS),
    SHUTDOWN_GRACE_MS: "1000",
  });
}, 60_000);
afterAll(async () => {
  await Promise.all(instances.map((i) => i.stop()));
  await store?.close();
  await cluster?.stop();
});

const token = (subject: string, scopes: string[] = []) =>
  mintToken({ secret: new TextEncoder().encode(SECRET), project: PROJECT, subject, ttlSeconds: 600, scopes });

/** The fields of the admin answers read here (CreateChannel, RotatePassphrase). */
interface AdminAnswer {
  readonly host_passphrase?: string;
  readonly attendee_passphrase?: string;
  readonly passphrase?: string;
}

/** A JSON admin call at `instance`: its status and body. */
async function adminCall(instance: Instance, method: string, path: string, body?: unknown) {
  const res = await fetch(`${instance.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${await token("meetings", [CHANNELS_ADMIN_SCOPE])}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(5_000),
  });
  return { status: res.status, body: (await res.json()) as AdminAnswer };
}

/** One JSON mute at `instance` as a subject of its own (a refusal counts as a wrong guess of its caller). */
async function muteAt(instance: Instance, subject: string, passphrase: string, uid: string): Promise<number> {
  const res = await fetch(`${instance.url}${ROUTES.mute}`, {
    method: "POST",
    headers: { authorization: `Bearer ${await token(subject)}`, "content-type": "application/json" },
    body: JSON.stringify({ uid, passphrase, mute: true }),
    signal: AbortSignal.timeout(5_000),
  });
  await res.arrayBuffer();
  return res.status;
}

interface Call {
  readonly instance: number;
  readonly start: number;
  readonly end: number;
  readonly status: number;
}

/** Clients muting with `passphrase`, client k at instance k mod 3, until `until()` says stop. */
async function muteUntil(clients: number, passphrase: string, until: () => boolean, calls: Call[]): Promise<void> {
  const client = async (k: number) => {
    const at = instances[k % instances.length] as Instance;
    for (let n = 0; !until(); n++) {
      const start = Date.now();
      const status = await muteAt(at, `client-${k}-${n}`, passphrase, `u${k}`);
      calls.push({ instance: at.index, start, end: Date.now(), status });
      await sleep(10);
    }
  };
  await Promise.all(Array.from({ length: clients }, (_, k) => client(k)));
}

/** Every key under the prefix that belongs to `channel` or is one of `passphrases`' records, on every master. */
async function keysOf(channel: string, passphrases: readonly string[]): Promise<string[]> {
  const pass = new Set(passphrases.map((p) => keySchema(prefix).passphrase(PROJECT, p)));
  const found: string[] = [];
  for (const n of cluster.nodes) {
    const node = new Redis(n.url, { maxRetriesPerRequest: 1 });
    try {
      let cursor = "0";
      do {
        const [next, keys] = await node.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
        cursor = next;
        found.push(...keys.filter((k) => k.includes(`{${PROJECT}/${channel}}`) || pass.has(k)));
      } while (cursor !== "0");
    } finally {
      node.disconnect();
    }
  }
  return found.sort();
}

const lastAcceptedAfter = (calls: readonly Call[], instance: number, at: number) =>
  Math.max(...calls.filter((c) => c.instance === instance && c.status === 200).map((c) => c.start)) - at;

test("RotatePassphrase while 8 clients mute with the old host passphrase through three instances", async () => {
  const channel = `rotate-${word()}`;
  const created = await adminCall(instances[0] as Instance, "POST", "/v1/channels", { channel_id: channel });
  expect(created.status).toBe(200);
  const old = String(created.body.host_passphrase);

  const calls: Call[] = [];
  let sent = Number.POSITIVE_INFINITY;
  let answered = Number.POSITIVE_INFINITY;
  let stopAt = Number.POSITIVE_INFINITY;
  let fresh = "";
  const rotate = async () => {
    try {
      await eventually(
        () => instances.every((i) => calls.some((c) => c.instance === i.index && c.status === 200)),
        10_000,
        "every instance to mute",
      );
      // Long enough for every instance's cache entry to have been renewed at a phase of its own.
      await sleep(CACHE_MS + 200);
      sent = Date.now();
      const rotated = await adminCall(
        instances[1] as Instance,
        "POST",
        `/v1/channels/${encodeURIComponent(channel)}/passphrase:rotate`,
        { role: "PASSPHRASE_ROLE_HOST" },
      );
      answered = Date.now();
      expect(rotated.status).toBe(200);
      fresh = String(rotated.body.passphrase);
    } finally {
      // The clients stop the cache bound and a margin after the answer (at once when the rotation failed).
      stopAt = Number.isFinite(answered) ? answered + CACHE_MS + MARGIN_MS + 1_000 : 0;
    }
  };
  await Promise.all([muteUntil(CLIENTS, old, () => Date.now() > stopAt, calls), rotate()]);

  const inFlight = calls.filter((c) => c.start <= answered && c.end >= sent);
  console.log(
    `rotation on three instances (PASSPHRASE_CACHE_MS ${CACHE_MS}): ${calls.length} mutes by ${CLIENTS} clients; ` +
      `the call took ${answered - sent} ms; ${inFlight.length} mutes in flight during it ` +
      `(${inFlight.filter((c) => c.status === 200).length} × 200, ${inFlight.filter((c) => c.status === 403).length} × 403); ` +
      `${calls.filter((c) => c.start <= answered && c.status !== 200).length} mutes started before its answer refused; ` +
      `the old passphrase last accepted ${instances.map((i) => lastAcceptedAfter(calls, i.index, answered)).join(" / ")} ms ` +
      "after the answer (per instance)",
  );
  expect(calls.filter((c) => c.status !== 200 && c.status !== 403)).toEqual([]);
  // Before the rotation was sent, the old passphrase opened the channel on every instance, for every client.
  const before = calls.filter((c) => c.start < sent);
  expect(before.length).toBeGreaterThanOrEqual(CLIENTS * 3);
  expect(before.filter((c) => c.status !== 200)).toEqual([]);
  // None later than the cache bound after the answer, on any instance.
  for (const i of instances) {
    const late = calls.filter((c) => c.instance === i.index && c.start > answered + CACHE_MS + MARGIN_MS);
    expect(late.length).toBeGreaterThan(0);
    expect(late.filter((c) => c.status !== 403)).toEqual([]);
  }
  // The new one opens it everywhere, at once (no instance has its absence cached).
  for (const i of instances) expect(await muteAt(i, `fresh-${i.index}`, fresh, "fresh")).toBe(200);
}, 60_000);

test("a channel created with expire_time = now + 2 s stops opening on every instance within the cache bound; its record and passphrases are gone", async () => {
  const channel = `expiring-${word()}`;
  const expireAt = Date.now() + 2_000;
  const created = await adminCall(instances[0] as Instance, "POST", "/v1/channels", {
    channel_id: channel,
    expire_time: new Date(expireAt).toISOString(),
  });
  expect(created.status).toBe(200);
  const passphrases = [String(created.body.host_passphrase), String(created.body.attendee_passphrase)];
  const [host] = passphrases as [string];
  expect(await muteAt(instances[2] as Instance, "first", host, "first")).toBe(200);
  // Record, both passphrases, mute hash, meta, event stream.
  expect((await keysOf(channel, passphrases)).length).toBeGreaterThanOrEqual(6);

  const calls: Call[] = [];
  const stopAt = expireAt + CACHE_MS + MARGIN_MS + 1_000;
  await muteUntil(3, host, () => Date.now() > stopAt, calls);

  console.log(
    `expiry on three instances (PASSPHRASE_CACHE_MS ${CACHE_MS}): ${calls.length} mutes; the channel last opened ` +
      `${instances.map((i) => lastAcceptedAfter(calls, i.index, expireAt)).join(" / ")} ms after its expire_time (per instance)`,
  );
  expect(calls.filter((c) => c.status !== 200 && c.status !== 403)).toEqual([]);
  expect(calls.filter((c) => c.end < expireAt && c.status !== 200)).toEqual([]);
  for (const i of instances) {
    const late = calls.filter((c) => c.instance === i.index && c.start > expireAt + CACHE_MS + MARGIN_MS);
    expect(late.length).toBeGreaterThan(0);
    expect(late.filter((c) => c.status !== 403)).toEqual([]);
  }
  const left = await keysOf(channel, passphrases);
  expired = { channel, left };
  // The channel's record and both passphrase records went with its expiry.
  expect(left.filter((k) => k.endsWith(":channel") || k.includes("pass:{"))).toEqual([]);
  const got = await adminCall(instances[1] as Instance, "GET", `/v1/channels/${encodeURIComponent(channel)}`);
  expect(got.status).toBe(404);
}, 60_000);

/**
 * Once failed: a mute let through by an instance's read cache after the
 * expiry found no channel record to take an expiry from and wrote the mute
 * hash, its meta and the event stream again with none, so they stayed for
 * ever. Now the passphrase record carries the channel's expiry: the read cache
 * keeps it no longer than that, and the mute script gives the keys that expiry
 * (src/store/redis/scripts.ts, SET_MUTE).
 */
test("…and its mute hash, meta and event stream are gone too (a mute accepted from a cache after the expiry writes them again, with no expiry)", async () => {
  expect(expired).toBeDefined();
  const raw = new Cluster([...cluster.seeds]);
  try {
    const ttls = await Promise.all((expired?.left ?? []).map(async (k) => `${k} PTTL ${await raw.pttl(k)}`));
    if (ttls.length > 0) console.log(`left after the expiry: ${ttls.join("; ")}`);
  } finally {
    raw.disconnect();
  }
  expect(expired?.left).toEqual([]);
});
