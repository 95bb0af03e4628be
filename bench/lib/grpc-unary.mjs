/**
 * A bare gRPC client for unary calls over one HTTP/2 connection (node:http2, h2c prior knowledge): the
 * request framed as gRPC frames it, the answer's one message returned, any grpc-status but 0 an error.
 * What the phone-line bench drives every call kind with, so the client costs each kind alike.
 */
import http2 from "node:http2";

/**
 * One connection to `base` (http://host:port) calling with the Bearer `jwt`.
 * @param {string} base
 * @param {string} jwt
 */
export function grpcConnection(base, jwt) {
  const session = http2.connect(base);
  // A connection error fails the calls in flight, which report it.
  session.on("error", () => {});
  /**
   * @param {string} path e.g. /channel.v1.PstnService/Mute
   * @param {Uint8Array} message the request, serialised
   * @returns {Promise<Buffer>} the answer, serialised
   */
  const call = (path, message) =>
    new Promise((resolve, reject) => {
      const frame = Buffer.alloc(5 + message.length);
      frame.writeUInt32BE(message.length, 1);
      frame.set(message, 5);
      const stream = session.request({
        ":method": "POST",
        ":path": path,
        "content-type": "application/grpc",
        te: "trailers",
        authorization: `Bearer ${jwt}`,
      });
      /** @type {Buffer[]} */
      const chunks = [];
      /** @type {unknown} */
      let status;
      /** @type {unknown} */
      let detail;
      /** @param {http2.IncomingHttpHeaders} h */
      const take = (h) => {
        if (h["grpc-status"] === undefined) return;
        status = h["grpc-status"];
        detail = h["grpc-message"];
      };
      stream.on("response", take);
      stream.on("trailers", take);
      stream.on("data", (c) => chunks.push(c));
      stream.on("error", reject);
      stream.on("end", () => {
        if (String(status) !== "0") {
          reject(new Error(`${path}: grpc-status ${status} ${decodeURIComponent(String(detail ?? ""))}`));
          return;
        }
        const body = Buffer.concat(chunks);
        resolve(body.subarray(5, 5 + body.readUInt32BE(1)));
      });
      stream.end(frame);
    });
  return { call, close: () => session.close() };
}
