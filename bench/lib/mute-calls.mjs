/**
 * The mutes of the mute-event watch benches (bench/scenarios/pstn-watchers.mjs,
 * bench/scenarios/watch-fanout.mjs): single mutes from the bench process (probes, attach
 * mutes: JSON over HTTP/1.1 keep-alive, resolving with the time the answer was
 * read), wrk's c16 load (bench/wrk/pstn-mute.lua, bodies taking turns), and what
 * the mutes left in Redis (each channel's last event id, how many events its
 * stream ever had). wrk processes still running when the bench exits are ended.
 */
import { spawn } from "node:child_process";
import http from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import { now, seen } from "./watch-clients.mjs";

const loads = new Set();
process.once("exit", () => {
  for (const child of loads) child.kill("SIGTERM");
});

/**
 * Mutes one at a time (at most 4 connections): `bodyOf(channel, uid, mute)` is the JSON body POSTed
 * to `url` with the Bearer `jwt`. The returned function resolves with the time the whole 200 answer
 * was read; with `retry503`, a 503 is tried again (at most 10 times, 100 ms apart) and counted in
 * `seen.mutes503`.
 */
export function muter(url, jwt, bodyOf) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const once = (channel, uid, mute) =>
    new Promise((resolve, reject) => {
      const req = http.request(
        url,
        {
          method: "POST",
          agent,
          headers: { "content-type": "application/json", authorization: `Bearer ${jwt}` },
          timeout: 10_000,
        },
        (res) => {
          let text = "";
          res.setEncoding("utf8");
          res.on("data", (c) => {
            text += c;
          });
          res.on("end", () => {
            const at = now();
            if (res.statusCode === 200) resolve(at);
            else reject(new Error(`mute answered ${res.statusCode}: ${text}`));
          });
        },
      );
      req.on("timeout", () => req.destroy(new Error("mute timed out")));
      req.on("error", reject);
      req.end(JSON.stringify(bodyOf(channel, uid, mute)));
    });
  return async (channel, uid, { mute = true, retry503 = false } = {}) => {
    for (let i = 0; ; i++) {
      try {
        return await once(channel, uid, mute);
      } catch (e) {
        if (!retry503 || i >= 10 || !(e instanceof Error) || !/answered 503/.test(e.message)) throw e;
        seen.mutes503++;
        await sleep(100);
      }
    }
  };
}

/**
 * `seconds` of wrk JSON mutes to `url` at `concurrency` (one thread, keep-alive), the bodies taking
 * turns through the lines of `bodies`, with the JWT in `jwtFile`; its summary (bench/wrk/pstn-mute.lua's
 * JSON) written to `out` when given. Resolves when wrk has exited 0.
 */
export function runMuteLoad({ url, bodies, jwtFile, seconds, out, concurrency = 16 }) {
  const args = ["-t", "1", "-c", String(concurrency), "-d", `${seconds}s`, "--timeout", "5s", "--latency"];
  args.push("-s", "bench/wrk/pstn-mute.lua", url);
  const child = spawn("wrk", args, {
    env: { ...process.env, BENCH_BODIES: bodies, BENCH_AUTH: jwtFile, BENCH_OUT: out ?? "" },
    stdio: ["ignore", "ignore", "inherit"],
  });
  loads.add(child);
  return /** @type {Promise<void>} */ (
    new Promise((resolve, reject) => {
      child.once("exit", (code) => {
        loads.delete(child);
        if (code === 0) resolve();
        else reject(new Error(`wrk exited ${code}`));
      });
    })
  );
}

/** The last event id of each of these event streams (keys; each must have an event). */
export async function lastEventIds(redis, streamKeys) {
  const pipeline = redis.pipeline();
  for (const key of streamKeys) pipeline.xrevrange(key, "+", "-", "COUNT", 1);
  const replies = await pipeline.exec();
  return replies.map(([err, entries]) => {
    if (err) throw err;
    return entries[0][0];
  });
}

/** How many events each of these streams ever had (XINFO STREAM's entries-added). */
export async function eventsAdded(redis, streamKeys) {
  const pipeline = redis.pipeline();
  for (const key of streamKeys) pipeline.xinfo("STREAM", key);
  const replies = await pipeline.exec();
  return replies.map(([err, info]) => {
    if (err) throw err;
    const i = info.indexOf("entries-added");
    return Number(info[i + 1]);
  });
}
