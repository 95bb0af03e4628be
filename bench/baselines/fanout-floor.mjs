/**
 * The fan-out floor of bench/scenarios/watch-fanout.mjs: the least a Node server can do
 * to hold watch streams open and hand each mute's event to them — node:http2
 * and node:http in one process, no Redis, no JWT, no limits, no keep-alive
 * comments, no per-watch queue. The bench's own watcher clients use it as
 * they use boardline, so its memory per stream and its answer → event delays
 * are what this machine and Node allow at all.
 *
 *   PORT=… GRPC_PORT=… node bench/baselines/fanout-floor.mjs
 *     GRPC_PORT  node:http2 (h2c): every stream is a watch — a gRPC
 *                WatchPstnEventsRequest (its first channel id is the channel);
 *                the response headers go out at once, then one gRPC message
 *                (a PstnEvent) per mute of the channel, never an end.
 *     PORT       node:http (HTTP/1.1):
 *                POST /mute {"channel","uid","mute"}: 200 {"uid","mute"}, and then
 *                  the channel's event — encoded once, the same bytes for every
 *                  stream — written to every open watch of the channel;
 *                GET /added: {"<channel>": events written so far, …};
 *                anything else is a watch as server-sent events (a body
 *                {"channel_ids":[channel, …]}): 200 text/event-stream at once, then
 *                `id:` and `data:` (the event's JSON) per mute.
 */
import http from "node:http";
import http2 from "node:http2";
import { create, fromBinary, toBinary, toJsonString } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { PstnEventSchema, WatchPstnEventsRequestSchema } from "../lib/protos.mjs";

/** @typedef {{ frame: Buffer, text: string }} Event one mute's event, encoded for both protocols */
/** channel → its open watches: each a function that writes one event. */
/** @type {Map<string, Set<(event: Event) => void>>} */
const watches = new Map();
/** channel → events written. */
/** @type {Map<string, number>} */
const added = new Map();
let sequence = 0;

/**
 * @param {string} channel
 * @param {(event: Event) => void} write
 * @param {(gone: () => void) => void} closed calls `gone` once the watch's connection closes
 */
function watch(channel, write, closed) {
  const set = watches.get(channel) ?? new Set();
  watches.set(channel, set);
  set.add(write);
  closed(() => {
    set.delete(write);
    if (set.size === 0 && watches.get(channel) === set) watches.delete(channel);
  });
}

/**
 * The event of a mute, encoded once: a gRPC message frame and a server-sent event.
 * @param {string} channel
 * @param {string} uid
 * @param {boolean} mute
 * @returns {Event}
 */
function encode(channel, uid, mute) {
  sequence++;
  const eventId = `1-${sequence}`;
  const event = create(PstnEventSchema, {
    eventId,
    cursor: eventId,
    channelId: channel,
    uid,
    mute,
    by: "floor",
    at: timestampFromMs(Date.now()),
  });
  const message = toBinary(PstnEventSchema, event);
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  const json = toJsonString(PstnEventSchema, event, { useProtoFieldName: true, alwaysEmitImplicit: true });
  return { frame, text: `id: ${eventId}\ndata: ${json}\n\n` };
}

/**
 * Calls `then(body)` with the whole request body.
 * @param {http.IncomingMessage | http2.ServerHttp2Stream} req
 * @param {(body: Buffer) => void} then
 */
function readBody(req, then) {
  /** @type {Buffer[]} */
  const chunks = [];
  req.on("data", (/** @type {Buffer} */ c) => chunks.push(c));
  req.on("end", () => then(Buffer.concat(chunks)));
  req.on("error", () => {});
}

/**
 * @param {http.IncomingMessage} req
 * @param {http.ServerResponse<http.IncomingMessage> & { req: http.IncomingMessage; }} res
 */
function onMute(req, res) {
  readBody(req, (body) => {
    const { channel, uid, mute } = JSON.parse(body.toString("utf8"));
    const answer = JSON.stringify({ uid, mute });
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(answer) });
    res.end(answer);
    added.set(channel, (added.get(channel) ?? 0) + 1);
    const set = watches.get(channel);
    if (set === undefined) return;
    const event = encode(channel, uid, mute);
    for (const write of set) write(event);
  });
}

const h1 = http.createServer((req, res) => {
  if (req.method === "POST" && req.url === "/mute") return onMute(req, res);
  if (req.method === "GET" && req.url === "/added") {
    res.writeHead(200, { "content-type": "application/json" });
    return res.end(JSON.stringify(Object.fromEntries(added)));
  }
  readBody(req, (body) => {
    const channel = JSON.parse(body.toString("utf8")).channel_ids[0];
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store" });
    res.flushHeaders();
    watch(
      channel,
      (event) => res.write(event.text),
      (gone) => res.once("close", gone),
    );
  });
});

const h2 = http2.createServer();
h2.on("stream", (stream) => {
  stream.on("error", () => {});
  readBody(stream, (body) => {
    const request = fromBinary(WatchPstnEventsRequestSchema, body.subarray(5));
    stream.respond({ ":status": 200, "content-type": "application/grpc+proto" });
    watch(
      request.channelIds[0] ?? "",
      (event) => stream.write(event.frame),
      (gone) => stream.once("close", gone),
    );
  });
});
h2.on("sessionError", () => {});

const host = process.env.HOST || "127.0.0.1";
h1.listen(Number(process.env.PORT || 0), host, () => {
  h2.listen(Number(process.env.GRPC_PORT || 0), host, () => {
    console.log(
      `fan-out floor listening on ${/** @type {import("node:net").AddressInfo} */ (h1.address()).port} (http) and ${/** @type {import("node:net").AddressInfo} */ (h2.address()).port} (h2c)`,
    );
  });
});
for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => process.exit(0));
}
