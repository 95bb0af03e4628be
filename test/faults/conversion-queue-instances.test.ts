/**
 * The conversion queues across three boardline processes (`node
 * dist/src/main.js`) on one Redis, against the simulator taking one create a
 * second per project, as the real backend does:
 * - a burst of 50 ConvertFiles from one project, spread over the three, is all
 *   accepted (Queued), submitted one a second across the three, and all reach
 *   Finished; another project's single request during the burst is
 *   submitted within about a second;
 * - an identical request to another instance gets the same task and one
 *   submission; with reuse false, a second;
 * - an instance killed while the backend makes its task (the answer not yet
 *   recorded): the request is not lost, but submitted again — the one window
 *   a backend without idempotency keys leaves, and the record shows it;
 * - instances SIGKILLed twenty times at random while twenty projects' queues
 *   drain: no accepted request is lost, and a request is submitted again only
 *   when its record shows a second attempt.
 * The figures (pace, refusals, the other project's wait, resubmissions) are printed.
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, expect, test } from "vitest";
import { mintToken } from "../../src/auth/jwt.js";
import { type ConversionSimulator, startConversionSimulator } from "../../src/demo/simulator/index.js";
import { silentLogger } from "../../src/log.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis/store.js";
import { eventually } from "../harness/eventually.js";
import { type Instance, startInstances } from "../harness/instances.js";
import { redisUrl, uniquePrefix } from "../harness/redis-url.js";
import { ROUTES } from "../harness/routes.js";
import { sleep } from "../harness/sleep.js";

const SECRET = "queue-instances-secret-0123456789abcdef";
const prefix = uniquePrefix("queue");
const KILL_PROJECTS = 20;
const word = () => randomBytes(6).toString("hex");

interface Project {
  readonly id: string;
  readonly token: string;
  readonly host: string;
}
const project = (id: string): Project => ({ id, token: `NETLESSSDK_${id}_${word()}`, host: `host ${id} ${word()}` });
const burst = project("burst");
const other = project("other");
const reuse = project("reuse");
const crash = project("crash");
const killed = Array.from({ length: KILL_PROJECTS }, (_, i) => project(`kill-${i}`));

let sim: ConversionSimulator;
let store: RedisStore;
let instances: Instance[] = [];

beforeAll(async () => {
  const all = [burst, other, reuse, crash, ...killed];
  // Three pages at 200 ms a step: Finished 0.8 s after creation.
  sim = await startConversionSimulator({
    credentials: { sdkTokens: all.map((p) => p.token), keys: [] },
    progressMs: 200,
    createsPerSecond: 1,
  });
  store = createRedisStore({ mode: "single", url: redisUrl() }, { keyPrefix: prefix, logger: silentLogger() });
  await store.waitUntilReady();
  for (const p of all) {
    await store.createChannel({ project: p.id, channel: "room", hostPassphrase: p.host });
    await store.setWhiteboard(p.id, { region: "us-sv", credentials: { sdkToken: p.token } });
  }
  instances = await startInstances(3, {
    REDIS_URL: redisUrl(),
    REDIS_KEY_PREFIX: prefix,
    JWT_SECRET: SECRET,
    CONVERSION_API_BASE: sim.url,
    CONVERSION_POLL_FIRST_MS: "100",
    CONVERSION_POLL_MAX_MS: "200",
    SHUTDOWN_GRACE_MS: "2000",
  });
}, 60_000);

afterAll(async () => {
  for (const i of instances) i.kill();
  await store?.close();
  await sim?.close();
});

const token = (p: Project) =>
  mintToken({ secret: new TextEncoder().encode(SECRET), project: p.id, subject: "presenter", ttlSeconds: 900 });

interface Answer {
  readonly status: number;
  readonly body: { task_uuid?: string; status?: string; reused?: boolean; queue_position?: number };
}

async function convert(at: Instance, p: Project, resource: string, more: { reuse?: boolean } = {}): Promise<Answer> {
  const res = await fetch(`${at.url}${ROUTES.convert}`, {
    method: "POST",
    headers: { authorization: `Bearer ${await token(p)}`, "content-type": "application/json" },
    body: JSON.stringify({ passphrase: p.host, resource_url: resource, conversion_type: "static", ...more }),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, body: (await res.json()) as Answer["body"] };
}

const instance = (i: number) => instances[i % instances.length] as Instance;
const createsOf = (resource: string) => sim.creates().filter((c) => c.resource === resource);

/** Waits until every task is Finished (or another end); answers their records. */
async function allEnded(uuids: readonly string[], timeoutMs: number) {
  await eventually(
    async () => {
      const records = await Promise.all(uuids.map((u) => store.conversions.getConversion(u)));
      return records.every((r) => r !== undefined && ["Finished", "Fail", "Abort"].includes(r.status));
    },
    timeoutMs,
    "every task to end",
  );
  return Promise.all(uuids.map(async (u) => (await store.conversions.getConversion(u)) ?? expect.fail(u)));
}

test("a burst of 50 from one project is all accepted, submitted one a second across three instances, and all Finished; another project is not held up", async () => {
  const refusedBefore = sim.refusedCreates();
  const resources = Array.from({ length: 50 }, (_, i) => `https://files.example/burst-${i}.pdf`);
  const answers = Promise.all(resources.map((r, i) => convert(instance(i), burst, r)));
  const theOther = (async () => {
    await sleep(2_000);
    const sentAt = Date.now();
    const answer = await convert(instance(1), other, "https://files.example/other.pdf");
    return { sentAt, answer };
  })();
  const accepted = await answers;
  expect(accepted.map((a) => a.status)).toEqual(resources.map(() => 200));
  expect(accepted.every((a) => a.body.status === "Queued" && a.body.reused === false)).toBe(true);
  // Each answered its place; the queue drains meanwhile, so the places are not all distinct.
  const places = accepted.map((a) => a.body.queue_position ?? 0);
  expect(places.every((p) => p >= 1 && p <= 50)).toBe(true);
  expect(Math.max(...places)).toBeGreaterThanOrEqual(45);

  const { sentAt, answer } = await theOther;
  expect(answer.status).toBe(200);
  await eventually(
    () => createsOf("https://files.example/other.pdf").length === 1,
    5_000,
    "the other project's create",
  );
  const otherWaitMs = (createsOf("https://files.example/other.pdf")[0]?.at ?? 0) - sentAt;
  expect(otherWaitMs).toBeLessThan(1_500);

  const records = await allEnded(
    accepted.map((a) => String(a.body.task_uuid)),
    120_000,
  );
  expect(records.map((r) => r.status)).toEqual(resources.map(() => "Finished"));
  expect(resources.map((r) => createsOf(r).length)).toEqual(resources.map(() => 1));
  const times = resources.map((r) => createsOf(r)[0]?.at ?? 0).sort((a, b) => a - b);
  const paceMs = ((times.at(-1) ?? 0) - (times[0] ?? 0)) / (times.length - 1);
  console.log(
    `burst: 50 accepted; submitted every ${paceMs.toFixed(0)} ms on average; ` +
      `${sim.refusedCreates() - refusedBefore} refused by the simulator; the other project waited ${otherWaitMs} ms`,
  );
  expect(paceMs).toBeGreaterThanOrEqual(900);
  expect(paceMs).toBeLessThanOrEqual(1_100);
}, 180_000);

test("an identical request to another instance gets the same task and one submission; reuse false a second", async () => {
  const deck = `https://files.example/reused-${word()}.pptx`;
  const first = await convert(instance(0), reuse, deck);
  const again = await convert(instance(1), reuse, deck);
  expect(again.body).toMatchObject({ task_uuid: first.body.task_uuid, reused: true });
  const fresh = await convert(instance(2), reuse, deck, { reuse: false });
  expect(fresh.body).toMatchObject({ status: "Queued", reused: false });
  expect(fresh.body.task_uuid).not.toBe(first.body.task_uuid);
  await allEnded([String(first.body.task_uuid), String(fresh.body.task_uuid)], 30_000);
  expect(createsOf(deck)).toHaveLength(2);
}, 60_000);

test("an instance killed while the backend makes its task: the request is submitted again, not lost, and its record says so", async () => {
  const deck = `https://files.example/crash-${word()}.pdf`;
  // Every create is answered 3 s late; the simulator makes the task on arrival.
  sim.setFault({ kind: "slow", delayMs: 3_000, operation: "create", times: 1 });
  const answer = await convert(instance(0), crash, deck);
  await eventually(() => createsOf(deck).length === 1, 10_000, "the create to arrive");
  for (const i of instances) i.kill();
  await Promise.all(instances.map((i) => i.restart()));
  const [record] = await allEnded([String(answer.body.task_uuid)], 60_000);
  expect(record?.status).toBe("Finished");
  expect(createsOf(deck)).toHaveLength(2);
  expect(record).toMatchObject({ attempts: 2, backendUuid: createsOf(deck)[1]?.uuid });
}, 90_000);

test("instances SIGKILLed twenty times while twenty queues drain: nothing accepted is lost, nothing is submitted twice unseen", async () => {
  const requests = killed.flatMap((p) =>
    [0, 1, 2].map((n) => ({ p, resource: `https://files.example/${p.id}-${n}.pdf` })),
  );
  const answers = await Promise.all(requests.map((r, i) => convert(instance(i), r.p, r.resource)));
  expect(answers.map((a) => a.status)).toEqual(requests.map(() => 200));
  for (let round = 0; round < 20; round++) {
    await sleep(Math.random() * 400);
    const victim = instance(Math.floor(Math.random() * 3));
    victim.kill();
    await victim.restart();
  }
  const uuids = answers.map((a) => String(a.body.task_uuid));
  const records = await allEnded(uuids, 120_000);
  expect(records.map((r) => r.status)).toEqual(requests.map(() => "Finished"));
  let resubmitted = 0;
  for (const [i, r] of requests.entries()) {
    const creates = createsOf(r.resource).length;
    expect(creates).toBeGreaterThanOrEqual(1);
    // Only a request whose earlier attempt was under way when its instance died is submitted again.
    expect(records[i]?.attempts ?? 0).toBeGreaterThanOrEqual(creates);
    if (creates > 1) resubmitted++;
  }
  console.log(`kills: 20; requests: ${requests.length}; submitted again: ${resubmitted}`);
}, 240_000);
