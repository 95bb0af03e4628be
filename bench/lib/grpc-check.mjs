/**
 * One real gRPC call with @grpc/grpc-js, to prove that what h2load measures
 * is successful calls: sends the exact frame file h2load sends and prints
 * `{"target","method","grpc_status","details","response"}` as one JSON line.
 * Exits 1 unless the status is 0 (OK).
 *
 *   node bench/lib/grpc-check.mjs <label> <host:port> <mute|convert|get> <frame file> <jwt file>
 */
import { readFileSync } from "node:fs";
import { fromBinary, toJson } from "@bufbuild/protobuf";
import grpc from "@grpc/grpc-js";
import { ConversionSchema, ConvertFileResponseSchema, MuteResponseSchema } from "./protos.mjs";

const [label, address, kind, frameFile, jwtFile] = process.argv.slice(2);
const methods = {
  mute: { path: "/channel.v1.PstnService/Mute", schema: MuteResponseSchema },
  convert: { path: "/whiteboard.v1.WhiteboardService/ConvertFile", schema: ConvertFileResponseSchema },
  get: { path: "/whiteboard.v1.WhiteboardService/GetConversion", schema: ConversionSchema },
};
const method = kind === "mute" || kind === "convert" || kind === "get" ? methods[kind] : undefined;
if (!label || !address || !method || !frameFile || !jwtFile) {
  console.error("usage: grpc-check.mjs <label> <host:port> <mute|convert|get> <frame file> <jwt file>");
  process.exit(2);
}
// The frame file is what h2load posts; grpc-js adds the 5-byte prefix itself.
const message = readFileSync(frameFile).subarray(5);
const metadata = new grpc.Metadata();
metadata.set("authorization", `Bearer ${readFileSync(jwtFile, "utf8").trim()}`);

const client = new grpc.Client(address, grpc.credentials.createInsecure());
client.makeUnaryRequest(
  method.path,
  (buf) => buf,
  (buf) => fromBinary(method.schema, buf),
  message,
  metadata,
  { deadline: Date.now() + 5000 },
  (err, response) => {
    const line = {
      target: label,
      method: method.path,
      grpc_status: err ? err.code : 0,
      details: err ? err.details : "",
      response: response ? toJson(method.schema, response) : null,
    };
    console.log(JSON.stringify(line));
    client.close();
    process.exit(line.grpc_status === 0 ? 0 : 1);
  },
);
