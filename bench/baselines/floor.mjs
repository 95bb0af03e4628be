/**
 * FLOOR: what Node's own HTTP stacks cost on this machine, with no work at
 * all — no JWT, no Redis, no protobuf. Same answers on the wire as the mute
 * calls (the JSON body; gRPC headers, one message frame, trailers), so the
 * load generators do the same work too. Its rows show how much of a latency
 * figure is the transport and the machine, before any code of ours runs.
 *
 *   PORT=… GRPC_PORT=… node bench/baselines/floor.mjs
 *     PORT       node:http (HTTP/1.1), any path: 200 {"uid":"bench-uid-1","mute":true}
 *     GRPC_PORT  node:http2 h2c, any path: a MuteResponse {uid: "bench-uid-1", mute: true}
 *
 * With FLOOR_WORK=redis (and REDIS_URL, REDIS_KEY_PREFIX) it is "the floor plus one Redis write":
 * before answering, each request runs the one Redis write every mute must make —
 * boardline's own mute script (EVALSHA through ioredis), with fixed arguments —
 * and nothing else: no body parsing, JWT, passphrase read or protobuf. Its rows
 * show what the transport plus that write cost, the least any mute server can.
 */
import http from "node:http";
import http2 from "node:http2";

const work = process.env.FLOOR_WORK === "redis" ? await redisWrite() : undefined;

/** The mute script's write (bench/baselines/mute-work.mjs), fixed arguments, as boardline and the baselines make it. */
async function redisWrite() {
  const { Redis } = await import("ioredis");
  const { keySchema } = await import("../lib/boardline.mjs");
  const { muteWriter } = await import("./mute-work.mjs");
  const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379", { maxRetriesPerRequest: 0 });
  const writeMute = muteWriter(redis, keySchema(process.env.REDIS_KEY_PREFIX || "bl:"));
  let n = 0;
  return () =>
    writeMute("floor-project", "floor-channel", {
      uid: "bench-uid-1",
      mute: n++ % 2 === 0,
      by: "floor",
      at: Date.now(),
    });
}

/**
 * Runs `answer` once the request's body has arrived (and, with the Redis write, the
 * write is done — unless the client went away meanwhile, as the load generator's
 * connections do at the end of a cell).
 * @param {http.IncomingMessage | http2.ServerHttp2Stream} request
 * @param {(http.ServerResponse<http.IncomingMessage> & { req: http.IncomingMessage; }) | http2.ServerHttp2Stream} response
 * @param {() => void} answer
 */
function whenRead(request, response, answer) {
  request.resume();
  if (work === undefined) {
    request.on("end", answer);
    return;
  }
  request.on("error", () => {});
  request.on("end", () =>
    work().then(
      () => response.destroyed || answer(),
      () => response.destroy(),
    ),
  );
}

const JSON_BODY = JSON.stringify({ uid: "bench-uid-1", mute: true });
// MuteResponse: field 1 (uid) "bench-uid-1", field 2 (mute) true — protobuf wire format, by hand.
const uid = Buffer.from("bench-uid-1");
const message = Buffer.concat([Buffer.from([0x0a, uid.length]), uid, Buffer.from([0x10, 0x01])]);
const frame = Buffer.alloc(5 + message.length);
frame.writeUInt32BE(message.length, 1);
message.copy(frame, 5);

const h1 = http.createServer((req, res) => {
  whenRead(req, res, () => {
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(JSON_BODY) });
    res.end(JSON_BODY);
  });
});

const h2 = http2.createServer();
h2.on("stream", (stream) => {
  whenRead(stream, stream, () => {
    stream.respond({ ":status": 200, "content-type": "application/grpc+proto" }, { waitForTrailers: true });
    stream.once("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
    stream.end(frame);
  });
});

const host = process.env.HOST || "127.0.0.1";
h1.listen(Number(process.env.PORT || 0), host, () => {
  h2.listen(Number(process.env.GRPC_PORT || 0), host, () => {
    console.log(
      `floor listening on ${/** @type {import("node:net").AddressInfo} */ (h1.address()).port} (http) and ${/** @type {import("node:net").AddressInfo} */ (h2.address()).port} (h2c)`,
    );
  });
});
for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => {
    h1.close();
    h2.close();
    process.exit(0);
  });
}
