/**
 * The task the GetConversion cells read: creates one conversion task through
 * ConvertFile (JSON) on boardline, waits (at most 30 s) until boardline's
 * follower has recorded it Finished — so every GetConversion answers the full
 * record, pages included — and writes into OUT_DIR:
 *
 *   task-uuid.txt   the task's uuid
 *   get.grpc        gRPC frame of a GetConversionRequest for it, for h2load -d
 *
 *   node bench/lib/conversion-task.mjs <boardline url> <convert.json> <jwt file>
 *
 * Environment: OUT_DIR.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { create, toBinary } from "@bufbuild/protobuf";
import { GetConversionRequestSchema } from "./protos.mjs";

const [url, convertFile, jwtFile] = process.argv.slice(2);
const outDir = process.env.OUT_DIR;
if (!url || !convertFile || !jwtFile || !outDir) {
  console.error("usage: OUT_DIR=… conversion-task.mjs <boardline url> <convert.json> <jwt file>");
  process.exit(2);
}
const authorization = `Bearer ${readFileSync(jwtFile, "utf8").trim()}`;
const created = await fetch(`${url}/v1/whiteboard/fileconvert`, {
  method: "POST",
  headers: { "content-type": "application/json", authorization },
  body: readFileSync(convertFile),
});
const { task_uuid: uuid } = /** @type {{ task_uuid?: unknown }} */ (await created.json());
if (created.status !== 200 || typeof uuid !== "string") throw new Error(`ConvertFile answered ${created.status}`);

let status = "";
for (let i = 0; i < 300 && status !== "Finished"; i++) {
  if (i > 0) await sleep(100);
  const res = await fetch(`${url}/v1/whiteboard/fileconvert/${uuid}`, { headers: { authorization } });
  status = /** @type {{ status: string }} */ (await res.json()).status;
}
if (status !== "Finished") throw new Error(`task ${uuid} is still ${status} after 30 s`);

const message = toBinary(GetConversionRequestSchema, create(GetConversionRequestSchema, { taskUuid: uuid }));
const frame = Buffer.alloc(5 + message.length);
frame.writeUInt32BE(message.length, 1);
frame.set(message, 5);
writeFileSync(join(outDir, "task-uuid.txt"), uuid);
writeFileSync(join(outDir, "get.grpc"), frame);
console.log(uuid);
