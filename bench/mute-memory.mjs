/**
 * Issue 24, part 4: which mute cell of `npm run bench` reaches the highest peak
 * RSS, and of what that peak is made. The mute cells of bench/run.sh (JSON by
 * wrk, gRPC by h2load, c1/c16/c64; a 1 s warm-up, then VmHWM reset by
 * `clear_refs 5`, then the measured run), twice:
 *
 * - "fresh": each cell on a boardline of its own, so a cell's peak is its own;
 * - "in a row": every cell on one boardline, in run.sh's order (c1, c16, c64;
 *   JSON then gRPC), so each peak starts from what the cells before left.
 *
 * After each cell, from boardline's /metrics and /proc: the V8 heap's committed
 * size per space (the young generation is `new`: two semi-spaces), external
 * memory, and the RSS that is neither (file pages: the node binary; anonymous
 * memory outside the V8 heap: malloc, thread stacks, buffers).
 *
 * Knobs: BENCH_SECONDS (5), BENCH_WARMUP (1), BENCH_CONCURRENCY ("1 16 64"), BENCH_MUTE_MEMORY_MODES ("fresh,row").
 * Needs wrk and h2load (bench/run.sh installs them).
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { procKb, Servers, splitCpus, stallProbe } from "./processes.mjs";

const env = process.env;
const SECONDS = Number(env.BENCH_SECONDS ?? 5);
const WARMUP = Number(env.BENCH_WARMUP ?? 1);
const CONCURRENCY = (env.BENCH_CONCURRENCY ?? "1 16 64").split(/\s+/).map(Number);
const MODES = (env.BENCH_MUTE_MEMORY_MODES ?? "fresh,row").split(",");
const WORK = mkdtempSync(join(tmpdir(), "bl-mute-memory-"));
const { serverCpu, loadCpu } = splitCpus();
const servers = new Servers({ work: WORK, cpu: serverCpu });
const log = (...args) => console.error(`[bench:mute-memory ${new Date().toISOString().slice(11, 19)}]`, ...args);
const mb = (bytes) => (bytes / 1024 / 1024).toFixed(1);

/** Runs the load of one cell for `seconds` (wrk or h2load, as bench/run.sh runs them). */
function load(bl, proto, c, seconds) {
  const jwt = readFileSync(join(WORK, "jwt.txt"), "utf8").trim();
  const r =
    proto === "JSON"
      ? spawnSync(
          "wrk",
          [
            "-t",
            "1",
            "-c",
            String(c),
            "--timeout",
            "5s",
            "-d",
            `${seconds}s`,
            "-s",
            "bench/post.lua",
            `${bl.url}/v1/channel/pstn/mute`,
          ],
          {
            encoding: "utf8",
            env: { ...env, BENCH_BODY: join(WORK, "mute.json"), BENCH_AUTH: join(WORK, "jwt.txt"), BENCH_OUT: "" },
          },
        )
      : spawnSync(
          "h2load",
          [
            "-t",
            "1",
            "-c",
            String(c),
            "-m",
            "1",
            "-D",
            String(seconds),
            "-d",
            join(WORK, "mute.grpc"),
            "-H",
            "content-type: application/grpc",
            "-H",
            "te: trailers",
            "-H",
            `authorization: Bearer ${jwt}`,
            `${bl.url}/channel.v1.PstnService/Mute`,
          ],
          { encoding: "utf8" },
        );
  if (r.status !== 0) throw new Error(`${proto} load failed: ${r.stderr}`);
  const rps =
    proto === "JSON"
      ? /Requests\/sec:\s+([\d.]+)/.exec(r.stdout)?.[1]
      : /finished in [^,]+, ([\d.]+) req\/s/.exec(r.stdout)?.[1];
  return Number(rps);
}

/** The V8 heap's committed bytes per space and external memory, from boardline's own /metrics. */
async function heapSpaces(bl) {
  const text = await (await fetch(`${bl.url}/metrics`)).text();
  const spaces = {};
  for (const m of text.matchAll(/^boardline_nodejs_heap_space_size_total_bytes\{space="(\w+)"\} (\d+)/gm)) {
    spaces[m[1]] = Number(m[2]);
  }
  const external = Number(/^boardline_nodejs_external_memory_bytes (\d+)/m.exec(text)?.[1] ?? 0);
  return { spaces, external };
}

async function cell(bl, proto, c, mode) {
  load(bl, proto, c, WARMUP);
  writeFileSync(`/proc/${bl.pid}/clear_refs`, "5");
  const rps = load(bl, proto, c, SECONDS);
  const { spaces, external } = await heapSpaces(bl);
  const heap = Object.values(spaces).reduce((a, b) => a + b, 0);
  const row = {
    mode,
    proto,
    c,
    rps,
    peakKb: procKb(bl.pid, "VmHWM"),
    rssFileKb: procKb(bl.pid, "RssFile"),
    rssAnonKb: procKb(bl.pid, "RssAnon"),
    heap,
    young: spaces.new ?? 0,
    old: spaces.old ?? 0,
    code: (spaces.code ?? 0) + (spaces.trusted ?? 0),
    external,
  };
  log(
    `${mode} ${proto} c${c}: ${rps.toFixed(0)} req/s, peak ${(row.peakKb / 1024).toFixed(0)} MB, heap ${mb(heap)} MB (young ${mb(row.young)})`,
  );
  return row;
}

async function startBoardline(name, redis) {
  return servers.startBoardline(name, { REDIS_URL: redis.url, JWT_SECRET: env.JWT_SECRET, REDIS_KEY_PREFIX: "bl:" });
}

const stall = stallProbe(serverCpu, loadCpu);
log(
  `stall probe (bench/stall.mjs): ${stall.stalled_pct.toFixed(1)} % of 5 s stalled, ${stall.gaps_over_2ms} gaps > 2 ms, ` +
    `longest ${stall.max_gap_ms.toFixed(1)} ms; load average ${loadavg()
      .map((x) => x.toFixed(2))
      .join(" ")}`,
);
const cells = CONCURRENCY.flatMap((c) => ["JSON", "gRPC"].map((proto) => ({ proto, c })));
const rows = [];
try {
  const redis = await servers.startRedis();
  env.JWT_SECRET = randomBytes(32).toString("hex");
  const seeded = spawnSync("node", ["bench/setup.mjs"], {
    encoding: "utf8",
    env: { ...env, REDIS_URL: redis.url, REDIS_KEY_PREFIX: "bl:", OUT_DIR: WORK },
  });
  if (seeded.status !== 0) throw new Error(`bench/setup.mjs failed: ${seeded.stderr}`);
  if (MODES.includes("fresh")) {
    for (const { proto, c } of cells) {
      const bl = await startBoardline(`fresh-${proto}-c${c}`, redis);
      rows.push(await cell(bl, proto, c, "fresh"));
      await bl.stop();
    }
  }
  if (MODES.includes("row")) {
    const bl = await startBoardline("row", redis);
    for (const { proto, c } of cells) rows.push(await cell(bl, proto, c, "in a row"));
  }
} finally {
  await servers.stopAll();
}
const kbMb = (kb) => (kb / 1024).toFixed(0);
console.log(
  "| boardline | cell | req/s | peak RSS MB | file MB | anonymous MB | V8 heap committed MB (young / old / code) | external MB | anonymous outside the V8 heap MB (about) |",
);
console.log(
  "| --------- | ---- | ----: | ----------: | ------: | -----------: | ----------------------------------------- | ----------: | -------------------------------: |",
);
for (const r of rows) {
  console.log(
    `| ${r.mode} | ${r.proto} c${r.c} | ${r.rps.toFixed(0)} | ${kbMb(r.peakKb)} | ${kbMb(r.rssFileKb)} | ${kbMb(r.rssAnonKb)} | ` +
      `${mb(r.heap)} (${mb(r.young)} / ${mb(r.old)} / ${mb(r.code)}) | ${mb(r.external)} | ${mb(r.rssAnonKb * 1024 - r.heap)} |`,
  );
}
writeFileSync(join(WORK, "rows.json"), JSON.stringify(rows, null, 2));
log(`figures and logs in ${WORK}`);
