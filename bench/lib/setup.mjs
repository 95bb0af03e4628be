/**
 * Seeds the bench's Redis and writes the request material into OUT_DIR:
 *
 *   jwt.txt            one HS256 JWT (project bench-proj, sub bench, 1 day)
 *   sdk-token.txt      the whiteboard SDK token the conversion simulator accepts
 *   mute.json          JSON body of a mute
 *   convert.json       JSON body of a ConvertFile
 *   mute.grpc          gRPC frame (5-byte prefix + protobuf MuteRequest), for h2load -d
 *   convert.grpc       gRPC frame of a ConvertFileRequest
 *
 * Records: a channel with a host passphrase, and the project's whiteboard
 * settings (region us-sv, sdk_token) — written by boardline's own store code.
 *
 * Environment: REDIS_URL, REDIS_KEY_PREFIX, JWT_SECRET, OUT_DIR.
 */
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { createLogger, createRedisStore, createSdkToken, loadSecretsKeys, mintToken } from "./boardline.mjs";
import { ConvertFileRequestSchema, MuteRequestSchema } from "./protos.mjs";

const { REDIS_URL, REDIS_KEY_PREFIX = "bl:", JWT_SECRET, OUT_DIR } = process.env;
if (!REDIS_URL || !JWT_SECRET || !OUT_DIR) throw new Error("REDIS_URL, JWT_SECRET and OUT_DIR are required");

const project = "bench-proj";
const channel = "bench-chan";
const passphrase = `bench-host-${randomBytes(8).toString("hex")}`;
const sdkToken = createSdkToken({
  accessKey: `bench-${randomBytes(4).toString("hex")}`,
  secretKey: randomBytes(24).toString("base64url"),
  role: "writer",
});

const store = createRedisStore(
  { mode: "single", url: REDIS_URL },
  { keyPrefix: REDIS_KEY_PREFIX, logger: createLogger("warn"), secretsKeys: loadSecretsKeys(process.env) },
);
await store.waitUntilReady();
await store.createChannel({ project, channel, hostPassphrase: passphrase });
await store.setWhiteboard(project, { region: "us-sv", credentials: { sdkToken } });
await store.close();

const jwt = await mintToken({
  secret: new TextEncoder().encode(JWT_SECRET),
  project,
  subject: "bench",
  ttlSeconds: 24 * 3600,
});

/**
 * A gRPC length-prefixed message: flag 0 (uncompressed), 4-byte big-endian length, bytes.
 * @param {Uint8Array} bytes
 */
function grpcFrame(bytes) {
  const frame = Buffer.alloc(5 + bytes.length);
  frame.writeUInt8(0, 0);
  frame.writeUInt32BE(bytes.length, 1);
  frame.set(bytes, 5);
  return frame;
}

const mute = { uid: "bench-uid-1", passphrase, mute: true };
const convert = { resource_url: "https://example.com/bench/deck.pptx", passphrase, conversion_type: "static" };
const files = {
  "jwt.txt": jwt,
  "sdk-token.txt": sdkToken,
  "mute.json": JSON.stringify(mute),
  "convert.json": JSON.stringify(convert),
  "mute.grpc": grpcFrame(toBinary(MuteRequestSchema, create(MuteRequestSchema, mute))),
  "convert.grpc": grpcFrame(
    toBinary(
      ConvertFileRequestSchema,
      create(ConvertFileRequestSchema, {
        resourceUrl: convert.resource_url,
        passphrase,
        conversionType: convert.conversion_type,
      }),
    ),
  ),
};
for (const [name, content] of Object.entries(files)) writeFileSync(join(OUT_DIR, name), content);
console.log(`seeded ${project}/${channel}; request material in ${Object.keys(files).join(", ")}`);
