/**
 * gRPC server reflection: `buf curl` works without local protos (run from an
 * empty directory), and grpc.reflection.v1alpha answers too.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, expect, test } from "vitest";
import { ServerReflection as ReflectionV1 } from "../../../gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ReflectionV1alpha } from "../../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { type Boardline, startBoardline } from "../../harness/boardline.js";
import { RPC_PATHS } from "../../harness/routes.js";

const BUF = resolve("node_modules/.bin/buf");

let bl: Boardline;
let emptyDir: string;
beforeAll(async () => {
  bl = await startBoardline({ store: "memory" });
  emptyDir = mkdtempSync(join(tmpdir(), "bl-bufcurl-"));
});
afterAll(async () => {
  await bl.close();
  rmSync(emptyDir, { recursive: true, force: true });
});

function bufCurl(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      BUF,
      ["curl", ...args],
      { cwd: emptyDir, timeout: 15_000, env: { ...process.env, BUF_CACHE_DIR: join(emptyDir, ".cache") } },
      (err, stdout, stderr) =>
        done({ code: err === null ? 0 : typeof err.code === "number" ? err.code : 1, stdout, stderr }),
    );
  });
}

test("buf curl --list-methods lists both RPCs from reflection alone", async () => {
  const r = await bufCurl(["--protocol", "grpc", "--http2-prior-knowledge", "--list-methods", bl.url]);
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  const methods = r.stdout.trim().split("\n");
  expect(methods).toEqual(
    expect.arrayContaining(["channel.v1.PstnService/Mute", "whiteboard.v1.WhiteboardService/ConvertFile"]),
  );
});

test("buf curl --list-services names the served services", async () => {
  const r = await bufCurl(["--protocol", "grpc", "--http2-prior-knowledge", "--list-services", bl.url]);
  expect(r.code).toBe(0);
  expect(r.stdout.trim().split("\n")).toEqual(
    expect.arrayContaining(["channel.v1.PstnService", "whiteboard.v1.WhiteboardService", "grpc.health.v1.Health"]),
  );
});

test("buf curl calls Mute with a Bearer token, schema from reflection", async () => {
  const token = await bl.token();
  const r = await bufCurl([
    "--protocol",
    "grpc",
    "--http2-prior-knowledge",
    "-H",
    `Authorization: Bearer ${token}`,
    "-d",
    JSON.stringify({ uid: "buf-curl", passphrase: bl.world.hostPassphrase, mute: true }),
    `${bl.url}${RPC_PATHS.mute}`,
  ]);
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  expect(JSON.parse(r.stdout)).toEqual({ uid: "buf-curl", mute: true });
  expect(await bl.store.getMuteState(bl.world.project, bl.world.channel)).toMatchObject({ "buf-curl": true });
});

test("buf curl with the Connect protocol (reflection over HTTP/2, the call too)", async () => {
  const token = await bl.token();
  const r = await bufCurl([
    "--http2-prior-knowledge",
    "-H",
    `Authorization: Bearer ${token}`,
    "-d",
    JSON.stringify({ uid: "buf-connect", passphrase: bl.world.hostPassphrase, mute: false }),
    `${bl.url}${RPC_PATHS.mute}`,
  ]);
  expect(r.code).toBe(0);
  // buf curl renders proto3 JSON without default values: `mute: false` is left out.
  expect({ mute: false, ...JSON.parse(r.stdout) }).toEqual({ uid: "buf-connect", mute: false });
  expect(await bl.store.getMuteState(bl.world.project, bl.world.channel)).toMatchObject({ "buf-connect": false });
});

test("buf curl sees the error of a call without a token", async () => {
  const r = await bufCurl([
    "--protocol",
    "grpc",
    "--http2-prior-knowledge",
    "-d",
    JSON.stringify({ uid: "x", passphrase: "p", mute: true }),
    `${bl.url}${RPC_PATHS.mute}`,
  ]);
  expect(r.code).not.toBe(0);
  expect(r.stdout + r.stderr).toMatch(/unauthenticated/i);
});

test.each([
  ["v1", ReflectionV1],
  ["v1alpha", ReflectionV1alpha],
] as const)("%s: list services, file containing a symbol, unknown symbol", async (_version, service) => {
  const client = createClient(service as typeof ReflectionV1, createGrpcTransport({ baseUrl: bl.url }));
  async function* requests() {
    yield { host: "", messageRequest: { case: "listServices" as const, value: "" } };
    yield { host: "", messageRequest: { case: "fileContainingSymbol" as const, value: "channel.v1.PstnService.Mute" } };
    yield { host: "", messageRequest: { case: "fileContainingSymbol" as const, value: "no.such.Thing" } };
    yield { host: "", messageRequest: { case: "fileByFilename" as const, value: "whiteboard/v1/whiteboard.proto" } };
  }
  const answers = [];
  for await (const res of client.serverReflectionInfo(requests())) answers.push(res);
  expect(answers).toHaveLength(4);
  const [list, file, unknown, byName] = answers;
  expect(list?.messageResponse.case).toBe("listServicesResponse");
  const names =
    list?.messageResponse.case === "listServicesResponse" ? list.messageResponse.value.service.map((s) => s.name) : [];
  expect(names).toEqual(expect.arrayContaining(["channel.v1.PstnService", "whiteboard.v1.WhiteboardService"]));
  expect(file?.messageResponse.case).toBe("fileDescriptorResponse");
  if (file?.messageResponse.case === "fileDescriptorResponse") {
    const protos = file.messageResponse.value.fileDescriptorProto.map((b) => fromBinary(FileDescriptorProtoSchema, b));
    expect(protos[0]?.name).toBe("channel/v1/pstn.proto");
    // Its imports travel with it, so a client needs no local protos.
    const names = protos.map((p) => p.name);
    for (const dep of protos[0]?.dependency ?? []) expect(names).toContain(dep);
  }
  expect(unknown?.messageResponse.case).toBe("errorResponse");
  if (unknown?.messageResponse.case === "errorResponse") expect(unknown.messageResponse.value.errorCode).toBe(5);
  expect(byName?.messageResponse.case).toBe("fileDescriptorResponse");
});
