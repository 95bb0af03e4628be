/**
 * A/B of the mute script alone: the script before issue 13 (HSET + XADD, two
 * keys; its text is kept below) against the build's (HSET + XADD + the meta
 * HSET + the SPUBLISH for the watches, four keys), on one redis-server this script starts (no persistence),
 * in alternating rounds (A B, then B A, …) so drift of the machine hits both.
 * Each round runs `calls` EVALSHAs of one variant, 16 in flight, over 50 uids
 * of one channel whose stream was first filled past its MAXLEN (so every round
 * trims, as in production), and reads:
 *   - Redis's own time per call (INFO commandstats `usec_per_call` of evalsha,
 *     after CONFIG RESETSTAT): the script's cost where it runs, without the
 *     network or the client;
 *   - calls per second as the client saw them.
 *
 *   npm run build && node bench/mute-script-ab.mjs [rounds=10] [calls=20000]
 *
 * Prints one line per round and a summary (median, min–max) per variant.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import { Redis } from "ioredis";
import { keySchema, MUTE_EVENTS_MAXLEN } from "../dist/src/store/schema/keys.js";
import { muteMetaHead } from "../dist/src/store/schema/channel-records.js";
import { defineScripts } from "../dist/src/store/redis/scripts.js";

/** SET_MUTE as it was before the meta hash (commit cd71aab). */
const BEFORE = `
local hashType = redis.call('TYPE', KEYS[1]).ok
local streamType = redis.call('TYPE', KEYS[2]).ok
if (hashType ~= 'none' and hashType ~= 'hash') or (streamType ~= 'none' and streamType ~= 'stream') then
  return redis.error_reply('WRONGTYPE pstn mute keys hold the wrong kind of value')
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[5], '*',
  'uid', ARGV[1], 'mute', ARGV[2], 'by', ARGV[3], 'at', ARGV[4])
`;

const rounds = Number(process.argv[2] ?? 10);
const calls = Number(process.argv[3] ?? 20_000);
const IN_FLIGHT = 16;
const UIDS = 50;

/** The build's scripts, as `defineScripts` hands them to ioredis. */
function buildScripts() {
  const lua = new Map();
  defineScripts({ defineCommand: (name, definition) => lua.set(name, definition.lua) });
  return lua;
}

async function freePort() {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address();
  server.close();
  return port;
}

const keys = keySchema("ab:");
const variants = {
  before: {
    lua: BEFORE,
    args: (i) => {
      const change = { uid: `pstn-${i % UIDS}`, mute: i % 2 === 0, by: "bench-host", at: Date.now() };
      return [2, keys.pstnMute("p", "before"), keys.pstnEvents("p", "before"), ...argv(change)];
    },
  },
  after: {
    lua: buildScripts().get("blSetMute"),
    args: (i) => {
      const change = { uid: `pstn-${i % UIDS}`, mute: i % 2 === 0, by: "bench-host", at: Date.now() };
      const k = [
        keys.pstnMute("p", "after"),
        keys.pstnEvents("p", "after"),
        keys.pstnMuteMeta("p", "after"),
        keys.pstnNotify("p", "after"),
        keys.channelRecord("p", "after"),
      ];
      return [k.length, ...k, ...argv(change), muteMetaHead(change)];
    },
  },
};

function argv(change) {
  return [change.uid, change.mute ? "1" : "0", change.by, String(change.at), String(MUTE_EVENTS_MAXLEN)];
}

/** `n` calls of a variant, IN_FLIGHT at a time; wall-clock ms. */
async function run(redis, variant, n) {
  const started = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < n) await redis.evalsha(variant.sha, ...variant.args(next++));
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return performance.now() - started;
}

async function usecPerCall(redis) {
  const info = await redis.info("commandstats");
  return Number(/cmdstat_evalsha:calls=\d+,usec=\d+,usec_per_call=([\d.]+)/.exec(info)?.[1]);
}

const summary = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return { median: s[Math.floor(s.length / 2)], min: s[0], max: s.at(-1) };
};

const port = await freePort();
const server = spawn(
  "redis-server",
  ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
  {
    stdio: "ignore",
  },
);
const redis = new Redis({ port, host: "127.0.0.1", lazyConnect: true });
redis.on("error", () => {}); // refused while redis-server starts; the connect loop below retries
try {
  for (let i = 0; i < 50; i++) {
    try {
      await redis.connect();
      break;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  for (const v of Object.values(variants)) {
    v.sha = await redis.script("LOAD", v.lua);
    await run(redis, v, MUTE_EVENTS_MAXLEN + 2_000); // past MAXLEN: every round trims
    v.usec = [];
    v.perSecond = [];
  }
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? ["before", "after"] : ["after", "before"];
    for (const name of order) {
      const v = variants[name];
      await redis.config("RESETSTAT");
      const ms = await run(redis, v, calls);
      v.usec.push(await usecPerCall(redis));
      v.perSecond.push((calls * 1000) / ms);
      console.log(
        `round ${r + 1} ${name}: ${v.usec.at(-1)} µs/call in Redis, ${Math.round(v.perSecond.at(-1))} calls/s`,
      );
    }
  }
  for (const [name, v] of Object.entries(variants)) {
    console.log(
      JSON.stringify({
        variant: name,
        usec_per_call: summary(v.usec),
        calls_per_second: summary(v.perSecond.map(Math.round)),
      }),
    );
  }
} finally {
  redis.disconnect();
  server.kill("SIGTERM");
}
