/**
 * BASELINE for the JSON mute route: the smallest node:http server doing the
 * same work per request as boardline's `POST /v1/channel/pstn/mute` (read the
 * body, JSON.parse, then `baseline-core.mjs`). "The limit of this stack."
 *
 *   PORT=… REDIS_URL=… JWT_SECRET=… node bench/baselines/baseline-http.mjs
 */
import http from "node:http";
import { createMuteHandler, MuteError } from "./mute-work.mjs";

const handler = createMuteHandler();

/**
 * @param {http.ServerResponse<http.IncomingMessage> & { req: http.IncomingMessage; }} res
 * @param {number} status
 * @param {object} body the JSON answer
 */
function send(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

const server = http.createServer((req, res) => {
  /** @type {Buffer[]} */
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      send(res, 400, { error: { code: 611, message: "body is not JSON" } });
      return;
    }
    handler.mute(req.headers.authorization, body?.uid, body?.passphrase, body?.mute).then(
      (answer) => send(res, 200, answer),
      (e) => {
        const code = e instanceof MuteError ? e.code : 500;
        send(res, code, { error: { code: code === 400 ? 611 : code, message: e.message } });
      },
    );
  });
});

server.listen(Number(process.env.PORT || 0), process.env.HOST || "127.0.0.1", () => {
  console.log(
    `baseline-http listening on http://127.0.0.1:${/** @type {import("node:net").AddressInfo} */ (server.address()).port}`,
  );
});

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.once(signal, () => {
    server.close();
    server.closeAllConnections();
    void handler.close().finally(() => process.exit(0));
  });
}
