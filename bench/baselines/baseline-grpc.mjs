/**
 * The gRPC peer: an @grpc/grpc-js server (h2c) with one method,
 * `channel.v1.PstnService/Mute`, doing the same work per request as the HTTP
 * baseline (`baseline-core.mjs`), with the protobuf messages decoded and
 * encoded by @bufbuild/protobuf from boardline's generated schemas.
 *
 *   PORT=… REDIS_URL=… JWT_SECRET=… node bench/baselines/baseline-grpc.mjs
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import grpc from "@grpc/grpc-js";
import { createMuteHandler, MuteError } from "./mute-work.mjs";
import { MuteRequestSchema, MuteResponseSchema } from "../lib/protos.mjs";

const handler = createMuteHandler();

/** @type {Record<number, grpc.status>} */
const STATUS = {
  400: grpc.status.INVALID_ARGUMENT,
  401: grpc.status.UNAUTHENTICATED,
  403: grpc.status.PERMISSION_DENIED,
};

const service = {
  Mute: {
    path: "/channel.v1.PstnService/Mute",
    requestStream: false,
    responseStream: false,
    requestDeserialize: (/** @type {Uint8Array<ArrayBufferLike>} */ bytes) => fromBinary(MuteRequestSchema, bytes),
    requestSerialize: (/** @type {import("../../gen/channel/v1/pstn_pb.js").MuteRequest} */ msg) =>
      Buffer.from(toBinary(MuteRequestSchema, msg)),
    responseSerialize: (/** @type {import("../../gen/channel/v1/pstn_pb.js").MuteResponse} */ msg) =>
      Buffer.from(toBinary(MuteResponseSchema, msg)),
    responseDeserialize: (/** @type {Uint8Array<ArrayBufferLike>} */ bytes) => fromBinary(MuteResponseSchema, bytes),
  },
};

const server = new grpc.Server();
server.addService(service, {
  /**
   * @param {grpc.ServerUnaryCall<import("../../gen/channel/v1/pstn_pb.js").MuteRequest, import("../../gen/channel/v1/pstn_pb.js").MuteResponse>} call
   * @param {grpc.sendUnaryData<import("../../gen/channel/v1/pstn_pb.js").MuteResponse>} callback
   */
  Mute(call, callback) {
    const auth = call.metadata.get("authorization")[0];
    const { uid, passphrase, mute } = call.request;
    handler.mute(typeof auth === "string" ? auth : undefined, uid, passphrase, mute).then(
      (answer) => callback(null, create(MuteResponseSchema, answer)),
      (e) => {
        const code = e instanceof MuteError ? (STATUS[e.code] ?? grpc.status.INTERNAL) : grpc.status.INTERNAL;
        callback({ code, details: e instanceof Error ? e.message : String(e) });
      },
    );
  },
});

server.bindAsync(
  `${process.env.HOST || "127.0.0.1"}:${Number(process.env.PORT || 0)}`,
  grpc.ServerCredentials.createInsecure(),
  (err, port) => {
    if (err) {
      console.error(`baseline-grpc: ${err.message}`);
      process.exit(1);
    }
    console.log(`baseline-grpc listening on http://127.0.0.1:${port}`);
  },
);

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.once(signal, () => {
    server.forceShutdown();
    void handler.close().finally(() => process.exit(0));
  });
}
