/**
 * `npm run soak`: a longer mixed load with faults, against a real server on
 * loopback, a durable redis-server of its own and the conversion simulator.
 * Every 20 s Redis is SIGKILLed for 2 s; every 15 s the conversion backend is
 * slow or failing for 3 s. At the end it prints requests, errors by kind,
 * latency, and the acknowledged mutes missing from Redis (must be 0; exit 1
 * otherwise, or on any answer outside the documented ones).
 *
 * SOAK_SECONDS (default 120) and SOAK_CONCURRENCY (default 16) tune it.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import { JwtAuthenticator, mintToken } from "../../src/auth/jwt.js";
import { NetlessConversionClient } from "../../src/conversion/netless-client.js";
import { startConversionSimulator } from "../../src/conversion/simulator/index.js";
import { silentLogger } from "../../src/log.js";
import { startService } from "../../src/compose.js";
import { MissLimitGuard } from "../../src/services/passphrase-guard.js";
import { createRedisStore } from "../../src/store/redis-store.js";
import { startRedisServer } from "../harness/redis-server.js";

const seconds = Number(process.env.SOAK_SECONDS ?? 120);
const concurrency = Number(process.env.SOAK_CONCURRENCY ?? 16);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const logger = silentLogger();
  const redis = await startRedisServer({ durable: true });
  const prefix = "soak:";
  const store = createRedisStore({ mode: "single", url: redis.url }, { keyPrefix: prefix, logger });
  await store.waitUntilReady();
  const ak = "soak-ak";
  const sk = randomBytes(24).toString("base64url");
  await store.createChannel({
    project: "soak",
    channel: "room",
    hostPassphrase: "soak host",
    attendeePassphrase: "soak guest",
  });
  await store.setWhiteboard("soak", { region: "us-sv", credentials: { accessKey: ak, secretKey: sk } });
  const sim = await startConversionSimulator({ credentials: { keys: [{ accessKey: ak, secretKey: sk }] } });
  const backend = new NetlessConversionClient({ baseUrl: sim.url, timeoutMs: 1000, logger });
  const secret = new Uint8Array(randomBytes(32));
  const server = await startService({
    host: "127.0.0.1",
    port: 0,
    store,
    authenticator: new JwtAuthenticator({
      key: { kind: "secret", secret },
      algorithms: ["HS256"],
      projectClaim: "project_id",
    }),
    backend,
    guard: new MissLimitGuard(store, { attempts: 1_000_000, windowSeconds: 60 }),
    logger,
    maxBodyBytes: 65536,
    corsOrigins: [],
  });
  const token = await mintToken({ secret, project: "soak", subject: "soak", ttlSeconds: seconds + 600 });
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };

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
          ? ["/v1/channel/pstn/mute", { uid, passphrase: "soak host", mute: n % 2 === 0 }, [200, 503]]
          : roll < 0.9
            ? [
                "/v1/whiteboard/fileconvert",
                { resource_url: "https://example.com/deck.pdf", passphrase: "soak guest", conversion_type: "static" },
                [200, 503, 504],
              ]
            : ["/v1/channel/pstn/mute", { uid, passphrase: "soak host" }, [400]];
      const start = performance.now();
      let status = 0;
      try {
        const res = await fetch(`${server.url}${path}`, {
          method: "POST",
          headers,
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(5000),
        });
        status = res.status;
        await res.arrayBuffer();
      } catch {
        status = 0;
      }
      latencies.push(performance.now() - start);
      requests++;
      count(status === 0 ? "no answer" : String(status));
      if (!(expected as number[]).includes(status)) unexpected++;
      if (status === 200 && path.endsWith("mute")) acknowledged.push(uid);
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

  const raw = new Redis(redis.url);
  const stored = await raw.hgetall(`${prefix}chan:{soak/room}:pstn-mute`);
  raw.disconnect();
  const lost = acknowledged.filter((uid) => stored[uid] === undefined).length;
  latencies.sort((a, b) => a - b);
  const pct = (p: number) =>
    (latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0).toFixed(1);

  await server.shutdown(2000);
  backend.close();
  await sim.close();
  await store.close();
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

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
