/**
 * The steps of bench/scenarios/watch-fanout.mjs, the same for each target (boardline,
 * and the bare fan-out floor, bench/baselines/fanout-floor.mjs): attach watches (until
 * each has its channel's attach mute), detach them, a c16 mute cell with or
 * without them (and the wait until every watcher has every event), and
 * sequential probe mutes timed from their answer to each watcher's receipt.
 *
 * A target: { name, pid, sseUrl, grpcUrl, watchJwt, waitGrpc, muteUrl, jwtFile,
 * bodies: { watched, unwatched } (wrk body files), mute(channel, uid, opts) →
 * answer time, lastIds(channels) → Map channel → event id, added(channels) →
 * events each channel ever had, lagMs() → the longest event-loop delay since
 * the last call (NaN when the target cannot say) }.
 * A context: { pool (bench/lib/fanout-watchers.mjs), work, seconds, warmup, probes,
 * serverCpu, loadCpu, log }.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { runMuteLoad } from "./mute-calls.mjs";
import { cpuTicks, cpuTime, TICK_US } from "./processes.mjs";
import { now, quantile, within } from "./watch-clients.mjs";

/** The longest wait for watches to get their attach mutes, to catch up after a cell, or to be let go. */
const WAIT_LIMIT_MS = 60_000;
const openFiles = (pid) => readdirSync(`/proc/${pid}/fd`).length;
let attaches = 0;

/** The CPU time counters a cell reads before and after. */
function cpuNow(ctx, target) {
  return {
    at: now(),
    server: cpuTicks(target.pid),
    watchers: ctx.pool.cpuTicks(),
    bench: process.cpuUsage(),
    serverCpu: ctx.serverCpu ? cpuTime(ctx.serverCpu) : undefined,
    loadCpu: ctx.loadCpu ? cpuTime(ctx.loadCpu) : undefined,
  };
}

/** Shares of a CPU (0–1) between two cpuNow readings; the server's and watchers' own CPU ms. */
function cpuSince(ctx, target, c0) {
  const c1 = cpuNow(ctx, target);
  const seconds = (c1.at - c0.at) / 1000;
  const busy = (a, b) => (a === undefined ? Number.NaN : (b.busy - a.busy) / (b.total - a.total));
  const bench = process.cpuUsage(c0.bench);
  return {
    seconds,
    serverMs: ((c1.server - c0.server) * TICK_US) / 1000,
    watchersMs: ((c1.watchers - c0.watchers) * TICK_US) / 1000,
    benchMs: (bench.user + bench.system) / 1000,
    serverCpuBusy: busy(c0.serverCpu, c1.serverCpu),
    loadCpuBusy: busy(c0.loadCpu, c1.loadCpu),
  };
}

/**
 * Opens `watches` ([{ protocol, channel }]) on `target`, each from its channel's last event id, then
 * mutes each channel once and waits until every watch has that mute.
 */
export async function attach(ctx, target, watches) {
  const channels = [...new Set(watches.map((w) => w.channel))];
  const afterOf = await target.lastIds(channels);
  const fdsBefore = openFiles(target.pid);
  const tag = `attach-${target.name}-${++attaches}`;
  await target.lagMs();
  const c0 = cpuNow(ctx, target);
  const opens = await ctx.pool.open(
    target,
    watches.map((w) => ({ ...w, after: afterOf.get(w.channel) ?? "" })),
  );
  const arrived = Promise.all(channels.map((c) => ctx.pool.arrival(`${tag}-${c}`, c)));
  await Promise.all(channels.map((c) => target.mute(c, `${tag}-${c}`, { retry503: true })));
  if (!(await within(arrived, WAIT_LIMIT_MS))) {
    const { errors } = await ctx.pool.problems();
    throw new Error(`${target.name}: attach mutes missing after 60 s (${errors.slice(0, 3).join("; ")})`);
  }
  const cpu = cpuSince(ctx, target, c0);
  const lagMs = await target.lagMs();
  const { counts } = await ctx.pool.counts();
  const attached = {
    watches,
    channels,
    fdsBefore,
    baseCounts: counts,
    baseAdded: await target.added(channels),
    ms: cpu.seconds * 1000,
    lagMs,
    serverCpuMs: cpu.serverMs,
    opened: opens.reduce((n, o) => n + o.opened, 0),
  };
  ctx.log(
    `${target.name}: ${watches.length} watches attached in ${attached.ms.toFixed(0)} ms (server CPU ${cpu.serverMs.toFixed(0)} ms)`,
  );
  return attached;
}

/**
 * Closes every watch, then waits until the target has let them go — its open descriptors back to
 * what they were before the attach (give or take 20) — so what comes next does not share its CPU
 * with the closing (at most WAIT_LIMIT_MS).
 */
export async function detach(ctx, target, attached) {
  await ctx.pool.close();
  const t0 = now();
  while (openFiles(target.pid) > attached.fdsBefore + 20 && now() - t0 < WAIT_LIMIT_MS) await sleep(50);
  const left = openFiles(target.pid) - attached.fdsBefore;
  if (left > 20) ctx.log(`${target.name}: ${left} more descriptors open than before the attach, 60 s after the detach`);
  await sleep(200);
}

/**
 * Waits (at most WAIT_LIMIT_MS) until every attached watch has every event its channel gained since
 * the attach; counts the deliveries since `countsAtT0`.
 */
async function drained(ctx, target, attached, countsAtT0) {
  const index = new Map(attached.channels.map((c, i) => [c, i]));
  const added = await target.added(attached.channels);
  const due = attached.watches.map((w, i) => {
    const c = index.get(w.channel);
    return attached.baseCounts[i] + added[c] - attached.baseAdded[c];
  });
  const t0 = now();
  let state;
  for (;;) {
    state = await ctx.pool.counts();
    const missing = state.counts.reduce((n, count, i) => n + Math.max(0, due[i] - count), 0);
    if (missing === 0 || now() - t0 > WAIT_LIMIT_MS) break;
    await sleep(20);
  }
  const { counts } = state;
  return {
    deliveries: counts.reduce((n, count, i) => n + Math.min(count, due[i]) - countsAtT0[i], 0),
    missing: counts.reduce((n, count, i) => n + Math.max(0, due[i] - count), 0),
    extra: counts.reduce((n, count, i) => n + Math.max(0, count - due[i]), 0),
    drainMs: now() - t0,
  };
}

/**
 * One cell: a warm-up, then `ctx.seconds` of c16 JSON mutes (wrk) with `target.bodies[bodies]`, with
 * `attached` watches or none; with them, the wait until every watcher has every event.
 */
export async function muteCell(ctx, target, bodies, attached, round) {
  const load = (seconds, out) =>
    runMuteLoad({ url: target.muteUrl, bodies: target.bodies[bodies], jwtFile: target.jwtFile, seconds, out });
  await load(ctx.warmup);
  const caughtUp = attached ? (await drained(ctx, target, attached, attached.baseCounts)).missing === 0 : true;
  const startCounts = attached ? (await ctx.pool.counts()).counts : undefined;
  const out = join(
    ctx.work,
    `fanout-${target.name}-${bodies}-w${attached ? attached.watches.length : 0}-r${round}.json`,
  );
  await target.lagMs();
  const c0 = cpuNow(ctx, target);
  await load(ctx.seconds, out);
  const cpu = cpuSince(ctx, target, c0);
  const lagMs = await target.lagMs();
  const delivered = attached ? await drained(ctx, target, attached, startCounts) : undefined;
  const wrk = JSON.parse(readFileSync(out, "utf8"));
  const result = {
    target: target.name,
    bodies,
    watches: attached ? attached.watches.length : 0,
    round,
    rps: wrk.requests / (wrk.duration_us / 1e6),
    p50Ms: wrk.latency_us.p50 / 1000,
    p99Ms: wrk.latency_us.p99 / 1000,
    failed: wrk.errors.status + wrk.errors.connect + wrk.errors.read + wrk.errors.write + wrk.errors.timeout,
    caughtUpBefore: caughtUp,
    serverCpuUsPerMute: (cpu.serverMs * 1000) / wrk.requests,
    lagMs,
    ...cpu,
    ...delivered,
  };
  ctx.log(
    `${target.name} ${bodies} w${result.watches} r${round}: ${result.rps.toFixed(0)} mutes/s, p99 ${result.p99Ms.toFixed(1)} ms` +
      (delivered ? `, ${delivered.deliveries} deliveries, ${delivered.missing} missing` : "") +
      `; load CPU ${(cpu.loadCpuBusy * 100).toFixed(0)} % busy, watchers ${((cpu.watchersMs / 1000 / cpu.seconds) * 100).toFixed(0)} %`,
  );
  return result;
}

/**
 * `watchers` watches of one `channel` over `protocol`, then `ctx.probes` mutes one at a time: each
 * timed from its answer to every watcher's receipt (every delivery, the first and the last).
 */
export async function probeDelays(ctx, target, protocol, channel, watchers) {
  const attached = await attach(
    ctx,
    target,
    Array.from({ length: watchers }, () => ({ protocol, channel })),
  );
  const deliveries = [];
  const probes = [];
  let missed = 0;
  const c0 = cpuNow(ctx, target);
  for (let i = 0; i < ctx.probes; i++) {
    const uid = `probe-${target.name}-${protocol}-${i}`;
    /** @type {number[]} */
    let times = [];
    const arrived = ctx.pool.arrival(uid, channel).then((t) => {
      times = t;
    });
    const sentAt = now();
    const ackAt = await target.mute(channel, uid);
    if (!(await within(arrived, 10_000))) {
      ctx.pool.forget(uid);
      missed++;
      continue;
    }
    for (const t of times) deliveries.push(t - ackAt);
    probes.push({
      sentToAck: ackAt - sentAt,
      ackToFirst: Math.min(...times) - ackAt,
      ackToLast: Math.max(...times) - ackAt,
    });
    await sleep(10 + Math.random() * 10);
  }
  const cpu = cpuSince(ctx, target, c0);
  await detach(ctx, target, attached);
  const last = probes.map((p) => p.ackToLast);
  const result = {
    target: target.name,
    protocol,
    watchers,
    probes: probes.length,
    missed,
    deliveries: deliveries.length,
    p50: quantile(deliveries, 0.5),
    p99: quantile(deliveries, 0.99),
    lastP50: quantile(last, 0.5),
    lastP99: quantile(last, 0.99),
    firstP50: quantile(
      probes.map((p) => p.ackToFirst),
      0.5,
    ),
    sentToAckP50: quantile(
      probes.map((p) => p.sentToAck),
      0.5,
    ),
    serverCpuMsPerProbe: cpu.serverMs / ctx.probes,
    watchersCpuMsPerProbe: cpu.watchersMs / ctx.probes,
    attachMs: attached.ms,
  };
  ctx.log(
    `${target.name} ${protocol} × ${watchers} on one channel: answer → event p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms, last watcher p50 ${result.lastP50.toFixed(2)} ms`,
  );
  return result;
}
