/**
 * `npm run soak`: a longer mixed load with faults, against a real server on
 * loopback (started by test/harness/boardline.ts, as the suites start theirs),
 * a durable redis-server of its own and the conversion simulator.
 * Every 20 s Redis is SIGKILLed for 2 s; every 15 s the conversion backend is
 * slow or failing for 3 s. At the end it prints requests, errors by kind,
 * latency, and the acknowledged mutes missing from Redis (must be 0; exit 1
 * otherwise, or on any answer outside the documented ones).
 *
 * SOAK_SECONDS (default 120) and SOAK_CONCURRENCY (default 16) tune it.
 * SOAK_INSTANCES=3 (2–9; default 1, the run above) runs the load over that many
 * boardline processes on a Redis Cluster instead, killing and restarting one
 * of them periodically (./soak-instances.ts).
 */
import type { AdminStore } from "../../src/services/ports.js";
import { MissLimitGuard } from "../../src/services/passphrase-guard.js";
import { startBoardline } from "../harness/boardline.js";
import { postJson } from "../harness/http.js";
import { startRedisServer } from "../harness/redis-server.js";
import { muteKey, rawRedis } from "../harness/redis-state.js";
import { convertBody, muteBody } from "../harness/request-bodies.js";
import { ROUTES } from "../harness/routes.js";
import { sleep } from "../harness/sleep.js";
import { soakInstances } from "./soak-instances.js";

const seconds = Number(process.env.SOAK_SECONDS ?? 120);
const concurrency = Number(process.env.SOAK_CONCURRENCY ?? 16);
const instances = Number(process.env.SOAK_INSTANCES ?? 1);

async function main() {
  const redis = await startRedisServer({ durable: true });
  // The guessing limit is on (its counters live in Redis too), high enough never to lock the soak out.
  const guard = (store: AdminStore) => new MissLimitGuard(store, { attempts: 1_000_000, windowSeconds: 60 });
  const bl = await startBoardline({ redisUrl: redis.url, prefix: "soak:", conversionTimeoutMs: 1000, guard });
  const sim = bl.simulator;
  const token = await bl.token(bl.world.project, "soak", seconds + 600);

  const byKind = new Map<string, number>();
  const latencies: number[] = [];
  const acknowledged: string[] = [];
  let requests = 0;
  let unexpected = 0;
  const t0 = Date.now();
  const end = t0 + seconds * 1000;
  const count = (kind: string) => byKind.set(kind, (byKind.get(kind) ?? 0) + 1);

  const worker = async (w: number) => {
    for (let n = 0; Date.now() < end; n++) {
      const roll = Math.random();
      const uid = `w${w}-${n}`;
      const [path, body, expected] =
        roll < 0.75
          ? [ROUTES.mute, muteBody(bl, { uid, mute: n % 2 === 0 }), [200, 503]]
          : roll < 0.9
            ? [ROUTES.convert, convertBody(bl, { passphrase: bl.world.attendeePassphrase }), [200, 503, 504]]
            : [ROUTES.mute, muteBody(bl, { uid, mute: undefined }), [400]];
      const start = performance.now();
      let status = 0;
      try {
        status = (await postJson(bl, path, body, { token, signal: AbortSignal.timeout(5000) })).status;
      } catch {
        status = 0;
      }
      latencies.push(performance.now() - start);
      requests++;
      count(status === 0 ? "no answer" : String(status));
      if (!(expected as number[]).includes(status)) unexpected++;
      if (status === 200 && path === ROUTES.mute) acknowledged.push(uid);
      if (status === 503) await sleep(10);
    }
  };
  const chaos = async () => {
    let next = 0;
    while (Date.now() < end - 3000) {
      await sleep(1000);
      next++;
      if (next % 20 === 0) {
        redis.kill("SIGKILL");
        await sleep(2000);
        await redis.restart();
        count("fault: redis killed");
      } else if (next % 15 === 0) {
        sim.setFault(next % 30 === 0 ? { kind: "status", status: 503 } : { kind: "slow", delayMs: 1500 });
        await sleep(3000);
        sim.clearFaults();
        count("fault: backend");
      }
    }
  };
  const progress = setInterval(() => {
    process.stderr.write(`  ${Math.round((Date.now() - t0) / 1000)} s: ${requests} requests\n`);
  }, 10_000);
  await Promise.all([...Array.from({ length: concurrency }, (_, w) => worker(w)), chaos()]);
  clearInterval(progress);

  const raw = rawRedis(bl);
  const stored = await raw.hgetall(muteKey(bl));
  raw.disconnect();
  const lost = acknowledged.filter((uid) => stored[uid] === undefined).length;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) =>
    (latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0).toFixed(1);

  await bl.close();
  await redis.stop();

  console.log(`soak: ${seconds} s, ${concurrency} clients`);
  console.log(
    `requests: ${requests} (${(requests / seconds).toFixed(0)}/s), latency p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms, max ${pct(1)} ms`,
  );
  console.log(
    `by kind: ${[...byKind.entries()]
      .sort()
      .map(([k, v]) => `${k}=${v}`)
      .join(", ")}`,
  );
  console.log(`acknowledged mutes: ${acknowledged.length}, lost writes = ${lost}`);
  console.log(`unexpected answers: ${unexpected}`);
  process.exit(lost === 0 && unexpected === 0 ? 0 : 1);
}

const run =
  instances === 1
    ? main
    : async () => {
        if (!Number.isInteger(instances) || instances < 2 || instances > 9) {
          throw new Error(`SOAK_INSTANCES must be 1 to 9, not ${JSON.stringify(process.env.SOAK_INSTANCES)}`);
        }
        process.exit((await soakInstances({ seconds, concurrency, instances })) ? 0 : 1);
      };

run().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
