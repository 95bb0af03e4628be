/**
 * The watchers of the mute-event watch benches (bench/scenarios/pstn-watchers.mjs,
 * bench/scenarios/watch-fanout.mjs and its watcher processes, bench/watch-host.mjs):
 * WatchPstnEvents clients over gRPC (raw node:http2 streams, each message
 * decoded with protobuf-es) and over server-sent events (one HTTP/1.1
 * connection each), what they have seen (`seen`: events, errors, order, the
 * probes waiting for a uid), the probe mutes sent from the bench process, wrk's
 * mute load (bench/wrk/pstn-mute.lua), and the Redis and metrics readings these
 * benches share. Times are `now()`: the monotonic clock, the same in every
 * process of the machine, so a watcher process's receipt times compare with
 * the bench process's answer times.
 */
import http from "node:http";
import http2 from "node:http2";
import { setTimeout as sleep } from "node:timers/promises";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { PstnEventSchema, WatchPstnEventsRequestSchema } from "./protos.mjs";

/** Milliseconds on CLOCK_MONOTONIC (the same clock in every process here). */
export const now = () => Number(process.hrtime.bigint()) / 1e6;

export const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
};
export const median = (xs) => quantile(xs, 0.5);

/** Resolves to whether `promise` settled within `ms` (the timer does not outlive it). */
export async function within(promise, ms) {
  const timer = new AbortController();
  try {
    return await Promise.race([
      promise.then(() => true),
      sleep(ms, false, { signal: timer.signal }).catch(() => false),
    ]);
  } finally {
    timer.abort();
  }
}

// --- what the watchers have seen -----------------------------------------------------------------

/** Everything the watchers of this process have seen, shared by them. */
/**
 * A probe mute on its way to the watchers.
 * @typedef {{ uid: string, expected: number, received: number, firstAt: number | undefined,
 *   lastAt: number | undefined, notifyAt: number | undefined, times?: number[], arrived: Promise<void>,
 *   done: () => void, sentAt?: number, ackAt?: number }} Probe
 */
/**
 * One watch as this module keeps it (the fields every kind of watch has).
 * @typedef {{ channel: string, count: number, lastId: string | undefined, opened: boolean, closed: boolean,
 *   detaching: boolean, cancel: () => void, reconnects: number }} Watch
 */

export const seen = {
  /** uid → the probe waiting for it. */
  /** @type {Map<string, Probe>} */
  probes: new Map(),
  /** Called with (watcher, event) for an event whose uid no probe waits for; may return a probe for it. */
  /** @type {((w: Watch, event: { uid: string, channelId: string }) => Probe | undefined) | undefined} */
  unexpected: undefined,
  /** @type {string[]} */
  errors: [],
  outOfOrder: 0,
  /** Why watches ended with UNAVAILABLE (and were opened again), and how often. */
  /** @type {Map<string, number>} */
  reconnects: new Map(),
  /** Each attach: how long until every watcher had the attach mute, and how many reconnected meanwhile. */
  /** @type {{ layout: string, round: number, ms: number, reconnects: number, lagMs: number, cpuMs: number }[]} */
  attaches: [],
  /**
   * Probe mutes that failed (not sent again: reported, not a failure of the bench — a server
   * fanning out a backlog may take longer to read a request than its headers time-out allows).
   */
  /** @type {string[]} */
  muteFailures: [],
  /** Attach mutes answered 503 (and sent again). */
  mutes503: 0,
  /** Events received by all watchers. */
  events: 0,
};

/**
 * A probe: resolves `arrived` once `expected` watchers have the event of `uid`. With `times`, the
 * receipt time of every delivery is kept (`p.times`), not only the first and the last.
 * @param {string} uid
 * @param {number} expected
 * @returns {Probe}
 */
export function probe(uid, expected, { times = false } = {}) {
  /** @type {() => void} */
  let done = () => {};
  /** @type {Promise<void>} */
  const arrived = new Promise((resolve) => {
    done = resolve;
  });
  /** @type {Probe} */
  const p = { uid, expected, received: 0, firstAt: undefined, lastAt: undefined, notifyAt: undefined, arrived, done };
  if (times) p.times = [];
  seen.probes.set(uid, p);
  return p;
}

/**
 * Stream ids "ms-seq" compared as numbers.
 * @param {string} a
 * @param {string} b
 */
function laterId(a, b) {
  const [am = 0, as = 0] = a.split("-").map(Number);
  const [bm = 0, bs = 0] = b.split("-").map(Number);
  return am > bm || (am === bm && as > bs);
}

/** An event a watcher received: `event` has at least eventId, channelId and uid. */
function onEvent(w, event, at) {
  seen.events++;
  w.count++;
  if (w.lastId !== undefined && !laterId(event.eventId, w.lastId)) seen.outOfOrder++;
  w.lastId = event.eventId;
  if (event.channelId !== w.channel) seen.errors.push(`${w.channel}: an event of ${event.channelId}`);
  const probe = seen.probes.get(event.uid) ?? seen.unexpected?.(w, event);
  if (probe !== undefined) {
    probe.received++;
    probe.firstAt ??= at;
    probe.lastAt = at;
    probe.times?.push(at);
    if (probe.received === probe.expected) probe.done();
  }
}

// --- the watchers ------------------------------------------------------------------------------

/** The longest a watcher goes on reconnecting after its watch ended (UNAVAILABLE, as a client does). */
const MAX_RECONNECTS = 20;

/** `opened`: the server answered the watch (its response headers came). */
function watcherState(channel) {
  return {
    channel,
    count: 0,
    lastId: undefined,
    opened: false,
    closed: false,
    detaching: false,
    cancel: () => {},
    reconnects: 0,
  };
}

/**
 * The end of one attempt of a watch, taken once: when detaching, nothing; else `retry(unavailable, why)`
 * may open the watch again (returns true), or the end is an error.
 */
function endOnce(w, retry) {
  let over = false;
  return (unavailable, why) => {
    if (over) return;
    over = true;
    if (w.detaching) {
      w.closed = true;
      return;
    }
    if (retry(unavailable, why)) return;
    seen.errors.push(`${w.channel}: ${why}`);
    w.closed = true;
  };
}

/** Opens the watch again 100–200 ms from now (as a client does after UNAVAILABLE), at most MAX_RECONNECTS times. */
function reconnect(w, why, again) {
  if (w.reconnects >= MAX_RECONNECTS) return false;
  w.reconnects++;
  seen.reconnects.set(why, (seen.reconnects.get(why) ?? 0) + 1);
  setTimeout(
    () => {
      if (!w.detaching) again();
    },
    100 + Math.random() * 100,
  );
  return true;
}

/**
 * A server-sent events answer split into its events: `handle({ lines, data, at })` for each (`data`: its
 * `data:` line's text, if it has one; `at`: `clock()` when the chunk that completed it came). Answers a
 * function that reads what is left unparsed.
 */
export function sseEvents(res, clock, handle) {
  res.setEncoding("utf8");
  let buffer = "";
  res.on("data", (chunk) => {
    const at = clock();
    buffer += chunk;
    for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
      const lines = buffer.slice(0, end).split("\n");
      buffer = buffer.slice(end + 2);
      handle({ lines, data: lines.find((l) => l.startsWith("data: "))?.slice(6), at });
    }
  });
  return () => buffer;
}

/**
 * A watcher of one channel over JSON: server-sent events on an HTTP/1.1 connection of its own
 * (`POST /v1/channel/pstn/events:watch`). A 503 answer, an `event: error` with code 503 or a
 * connection that fails before the answer (reset, refused) is UNAVAILABLE: opened again from the
 * last event id, as with gRPC (and as an EventSource does).
 */
export function openSseWatch(url, jwt, channel, after) {
  const w = watcherState(channel);
  const attempt = (from) => {
    const ended = endOnce(w, (unavailable, why) =>
      unavailable ? reconnect(w, why, () => attempt(w.lastId ?? after)) : false,
    );
    const req = http.request(
      `${url}/v1/channel/pstn/events:watch`,
      {
        method: "POST",
        agent: false,
        headers: { "content-type": "application/json", authorization: `Bearer ${jwt}` },
      },
      (res) => {
        w.opened ||= res.statusCode === 200;
        const unparsed = sseEvents(res, now, ({ lines, data, at }) => {
          if (data === undefined) return;
          if (res.statusCode !== 200 || lines.includes("event: error")) {
            ended(/"code":503/.test(data), `${res.statusCode} ${data}`);
            return;
          }
          const e = JSON.parse(data);
          onEvent(w, { eventId: e.event_id, channelId: e.channel_id, uid: e.uid }, at);
        });
        res.on("end", () =>
          ended(res.statusCode === 503, `HTTP ${res.statusCode}: the stream ended ${unparsed().slice(0, 200)}`),
        );
        res.on("close", () => ended(false, "the response was cut short"));
      },
    );
    req.on("error", (e) => ended(true, e.message)); // a transport error, before any answer: as UNAVAILABLE
    w.cancel = () => req.destroy();
    req.end(JSON.stringify({ channel_ids: [channel], after: from }));
  };
  attempt(after);
  return w;
}

/**
 * A watcher of one channel: WatchPstnEvents over the gRPC protocol on a raw HTTP/2 stream,
 * each message decoded. Like a real client, a watch that ends with UNAVAILABLE — or with a
 * stream error, which gRPC clients report as UNAVAILABLE — is opened again (100–200 ms later,
 * while its connection lives) from the last event id received: counted in `seen.reconnects`
 * with the reason; any other end is an error.
 */
export function openGrpcWatch(session, jwt, channel, after) {
  const w = watcherState(channel);
  const attempt = (from) => {
    const request = toBinary(
      WatchPstnEventsRequestSchema,
      create(WatchPstnEventsRequestSchema, { channelIds: [channel], after: from }),
    );
    const frame = Buffer.alloc(5 + request.length);
    frame.writeUInt32BE(request.length, 1);
    frame.set(request, 5);
    const stream = session.request({
      ":method": "POST",
      ":path": "/channel.v1.PstnService/WatchPstnEvents",
      "content-type": "application/grpc",
      te: "trailers",
      authorization: `Bearer ${jwt}`,
    });
    w.cancel = () => stream.close(http2.constants.NGHTTP2_CANCEL);
    let buffer = Buffer.alloc(0);
    stream.on("data", (chunk) => {
      const at = now();
      buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
      while (buffer.length >= 5) {
        const length = buffer.readUInt32BE(1);
        if (buffer.length < 5 + length) break;
        onEvent(w, fromBinary(PstnEventSchema, buffer.subarray(5, 5 + length)), at);
        buffer = buffer.subarray(5 + length);
      }
    });
    const ended = endOnce(w, (unavailable, why) =>
      unavailable && !session.destroyed ? reconnect(w, why, () => attempt(w.lastId ?? after)) : false,
    );
    const statusOf = (h) => [String(h["grpc-status"]), decodeURIComponent(String(h["grpc-message"] ?? ""))];
    stream.on("response", (headers) => {
      const [status, message] = statusOf(headers);
      if (headers["grpc-status"] !== undefined && status !== "0")
        ended(status === "14", `grpc-status ${status} ${message}`);
      else w.opened = true;
    });
    stream.on("trailers", (t) => {
      const [status, message] = statusOf(t);
      ended(status === "14", `the watch ended: grpc-status ${status} ${message}`);
    });
    stream.on("error", (e) => ended(true, e.message)); // a transport error: gRPC's UNAVAILABLE
    stream.on("close", () => ended(false, "the stream closed without a status"));
    stream.end(frame);
  };
  attempt(after);
  return w;
}
