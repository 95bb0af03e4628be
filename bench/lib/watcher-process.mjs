/**
 * One watcher process of bench/scenarios/watch-fanout.mjs (started by
 * bench/lib/fanout-watchers.mjs with an IPC channel, on the load CPU): it holds the
 * watches it is told to open — the clients of bench/lib/watch-clients.mjs, gRPC
 * streams over HTTP/2 connections of at most 200 streams, SSE over a
 * connection each — and reports over IPC. Several such processes can share
 * 10 000 watches when one cannot keep up.
 *
 * Messages from the bench (each answered with the same `id`):
 *   { op: "open", id, sseUrl, grpcUrl, jwt, watches: [{ protocol, channel, after }], waitGrpc }
 *       opens them (SSE at most 250 waiting for their answer at once) and answers
 *       { opened, failed, ms } once every SSE watch — and with `waitGrpc` every
 *       gRPC watch — has its response headers (at most 60 s);
 *   { op: "counts", id }  → { counts: each watch's events, in the order opened };
 *   { op: "problems", id } → { errors, outOfOrder, reconnects: { reason: n } } since the last time asked;
 *   { op: "close", id }   → ends every watch and connection.
 * Unasked: for each event whose uid does not start with "load-", once every watch of
 * this process on its channel has it, { op: "arrived", uid, times } — the receipt time of
 * each delivery (bench/lib/watch-clients.mjs `now()`, the clock of every process here).
 */
import http2 from "node:http2";
import { setTimeout as sleep } from "node:timers/promises";
import { now, openGrpcWatch, openSseWatch, probe, seen, within } from "./watch-clients.mjs";

const STREAMS_PER_SESSION = 200;
const SSE_IN_FLIGHT = 250;
const OPEN_LIMIT_MS = 60_000;

/** @type {import("./watch-clients.mjs").Watch[]} */
let watchers = [];
/** @type {http2.ClientHttp2Session[]} */
let sessions = [];
/** channel → how many of this process's watches watch it. */
/** @type {Map<string, number>} */
let perChannel = new Map();
/** @param {object} message to the bench process, over the IPC channel this process is forked with */
const tell = (message) => process.send?.(message);

seen.unexpected = (_w, event) => {
  if (event.uid.startsWith("load-")) return undefined;
  const p = probe(event.uid, perChannel.get(event.channelId) ?? 1, { times: true });
  p.arrived.then(() => {
    seen.probes.delete(p.uid);
    tell({ op: "arrived", uid: p.uid, times: p.times });
  });
  return p;
};

function session(grpcUrl) {
  const s = http2.connect(grpcUrl);
  s.on("error", (e) => seen.errors.push(`session: ${e.message}`));
  sessions.push(s);
  return s;
}

/** Resolves once `ready(w)` holds for every watcher of `list` that has not closed, or after `ms`. */
async function until(list, ready, ms) {
  const limit = now() + ms;
  while (!list.every((w) => w.closed || ready(w)) && now() < limit) await sleep(5);
}

async function open({ sseUrl, grpcUrl, jwt, watches, waitGrpc }) {
  const t0 = now();
  for (const { channel } of watches) perChannel.set(channel, (perChannel.get(channel) ?? 0) + 1);
  let grpcStreams = STREAMS_PER_SESSION;
  const grpcWatchers = [];
  let batch = [];
  for (const { protocol, channel, after } of watches) {
    if (protocol === "grpc") {
      if (grpcStreams === STREAMS_PER_SESSION) {
        session(grpcUrl);
        grpcStreams = 0;
      }
      grpcStreams++;
      const w = openGrpcWatch(sessions.at(-1), jwt, channel, after);
      watchers.push(w);
      grpcWatchers.push(w);
      continue;
    }
    const w = openSseWatch(sseUrl, jwt, channel, after);
    watchers.push(w);
    batch.push(w);
    if (batch.length === SSE_IN_FLIGHT) {
      await until(batch, (x) => x.opened, OPEN_LIMIT_MS);
      batch = [];
    }
  }
  await until(batch, (w) => w.opened, OPEN_LIMIT_MS);
  if (waitGrpc) await until(grpcWatchers, (w) => w.opened, OPEN_LIMIT_MS);
  return {
    opened: watchers.filter((w) => w.opened).length,
    failed: watchers.filter((w) => w.closed).length,
    ms: now() - t0,
  };
}

async function close() {
  for (const w of watchers) {
    w.detaching = true;
    w.cancel();
  }
  await Promise.all(sessions.map((s) => within(new Promise((resolve) => s.close(() => resolve(undefined))), 5_000)));
  watchers = [];
  sessions = [];
  perChannel = new Map();
  seen.probes.clear();
  return {};
}

function counts() {
  return { counts: watchers.map((w) => w.count) };
}

function problems() {
  const answer = {
    errors: seen.errors.splice(0),
    outOfOrder: seen.outOfOrder,
    reconnects: Object.fromEntries(seen.reconnects),
  };
  seen.outOfOrder = 0;
  seen.reconnects.clear();
  return answer;
}

const ops = { open, close, counts, problems };
process.on("message", async (/** @type {{ op: keyof typeof ops, id: number }} */ message) => {
  try {
    const answer = await ops[message.op](/** @type {any} */ (message));
    tell({ id: message.id, ...answer });
  } catch (e) {
    tell({ id: message.id, error: e instanceof Error ? (e.stack ?? e.message) : String(e) });
  }
});
process.on("disconnect", () => process.exit(0));
