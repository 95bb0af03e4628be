/**
 * What bench/scenarios/follow.mjs needs to follow conversions: a Redis seeded with one project whose
 * whiteboard points at the simulator, the simulator in a process of its own
 * with every task kept in flight, the tasks made by ConvertFile calls, and the
 * follower's poll count and lateness read from an instance's /metrics.
 */
import { fork } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createLogger, createRedisStore, createSdkToken, loadSecretsKeys, mintToken } from "./boardline.mjs";

const PROJECT = "bench-proj";

/**
 * A fresh project on `redisUrl` (one channel, its host passphrase, a whiteboard
 * with a new SDK token), and what a caller needs: the passphrase, the SDK token
 * the simulator must accept, the JWT secret and a token for ConvertFile (and Mute).
 * @param {string} redisUrl
 * @param {{ conversionQps?: number }} [whiteboard] the whiteboard's `conversion_qps` (absent: the default, 1)
 */
export async function seedFollowProject(redisUrl, whiteboard = {}) {
  const passphrase = `bench-host-${randomBytes(8).toString("hex")}`;
  const jwtSecret = randomBytes(32).toString("base64url");
  const sdkToken = createSdkToken({
    accessKey: `bench-${randomBytes(4).toString("hex")}`,
    secretKey: randomBytes(24).toString("base64url"),
    role: "writer",
  });
  const store = createRedisStore(
    { mode: "single", url: redisUrl },
    { keyPrefix: "bl:", logger: createLogger("warn"), secretsKeys: loadSecretsKeys(process.env) },
  );
  await store.waitUntilReady();
  await store.createChannel({ project: PROJECT, channel: "bench-chan", hostPassphrase: passphrase });
  const qps = whiteboard.conversionQps === undefined ? {} : { conversionQps: whiteboard.conversionQps };
  await store.setWhiteboard(PROJECT, { region: "us-sv", credentials: { sdkToken }, ...qps });
  await store.close();
  const token = await mintToken({
    secret: new TextEncoder().encode(jwtSecret),
    project: PROJECT,
    subject: "bench",
    ttlSeconds: 3600,
  });
  return { passphrase, sdkToken, jwtSecret, token };
}

/**
 * The simulator (bench/lib/watch-simulator.mjs) with a progress step of an hour: every task stays in flight.
 * @param {string} sdkToken
 */
export async function startFollowSimulator(sdkToken) {
  const child = fork("bench/lib/watch-simulator.mjs", [], {
    env: { ...process.env, SIM_SDK_TOKEN: sdkToken, SIM_PROGRESS_MS: String(3_600_000) },
    stdio: ["ignore", "ignore", "inherit", "ipc"],
  });
  process.once("exit", () => child.kill());
  /** @type {string} */
  const url = await new Promise((resolve, reject) => {
    child.once("message", (/** @type {{ ready: string }} */ m) => resolve(m.ready));
    child.once("exit", () => reject(new Error("the simulator exited")));
  });
  return { child, pid: child.pid, url };
}

/**
 * `count` ConvertFile calls (JSON route), `concurrency` at a time, spread over the instances; their task uuids.
 * @param {string[]} urls
 * @param {{ token: string, passphrase: string }} project the seeded project's JWT and passphrase
 * @param {number} count
 */
export async function createTasks(urls, { token, passphrase }, count, concurrency = 64) {
  /** @type {string[]} */
  const uuids = [];
  let next = 0;
  const body = JSON.stringify({
    resource_url: "https://docs.example.com/deck.pptx",
    passphrase,
    conversion_type: "static",
  });
  const worker = async () => {
    while (next < count) {
      const i = next++;
      const res = await fetch(`${urls[i % urls.length]}/v1/whiteboard/fileconvert`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body,
      });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`ConvertFile: ${res.status} ${text}`);
      uuids.push(JSON.parse(text).task_uuid);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return uuids;
}

/**
 * The lateness histogram's cumulative bucket counts (by upper bound, seconds) and its count (the polls made).
 * @param {string} url the instance's metrics port (`metricsUrl` of `Servers.startBoardline`)
 * @returns {Promise<{ buckets: Map<number, number>, count: number }>}
 */
export async function lateness(url) {
  const text = await (await fetch(`${url}/metrics`)).text();
  /** @type {Map<number, number>} */
  const buckets = new Map();
  let count = 0;
  for (const line of text.split("\n")) {
    const bucket = /^boardline_conversion_poll_lateness_seconds_bucket\{le="([^"]+)"\} (\d+)/.exec(line);
    if (bucket) buckets.set(bucket[1] === "+Inf" ? Number.POSITIVE_INFINITY : Number(bucket[1]), Number(bucket[2]));
    const total = /^boardline_conversion_poll_lateness_seconds_count (\d+)/.exec(line);
    if (total) count = Number(total[1]);
  }
  return { buckets, count };
}
