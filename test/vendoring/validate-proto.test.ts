// proto/buf/validate/validate.proto is vendored by reconstructing it from the
// descriptor that @bufbuild/protovalidate ships in its generated code. This
// test proves the reconstruction compiles (with buf) to exactly that
// descriptor, and that the committed file is what the generator produces.
//
// Regenerate with:
//   WRITE_VENDORED=1 npx vitest run test/vendoring/validate-proto.test.ts

import { execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { clearField, clone, createRegistry, fromBinary, toBinary, toJson } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import type { FileDescriptorProto } from "@bufbuild/protobuf/wkt";
import { file_buf_validate_validate } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { beforeAll, describe, expect, it } from "vitest";
import { descriptorToProto } from "../../tools/vendoring/descriptor-to-proto.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const vendoredPath = "proto/buf/validate/validate.proto";
const pkgDir = join(root, "node_modules/@bufbuild/protovalidate");
const bufBin = join(root, "node_modules/.bin/buf");

function buf(args: readonly string[]): string {
  try {
    return execFileSync(bufBin, args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new Error(`buf ${args.join(" ")} failed: ${err.stderr ?? err.message}`);
  }
}

/** The .proto text we vendor: license header, provenance note, reconstruction. */
function renderVendored(): string {
  const { version } = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")) as { version: string };
  const genFile = readFileSync(join(pkgDir, "dist/esm/gen/buf/validate/validate_pb.js"), "utf8");
  const license: string[] = [];
  for (const line of genFile.split("\n")) {
    if (!line.startsWith("//")) break;
    license.push(line);
  }
  if (!license.some((l) => l.includes("Apache License"))) {
    throw new Error("license header not found in @bufbuild/protovalidate generated code");
  }
  const header = [
    ...license,
    "",
    "// Reconstructed from the FileDescriptorProto embedded in the npm package",
    `// @bufbuild/protovalidate@${version} (its generated buf/validate/validate_pb.js),`,
    "// not copied from the original source: the original comments are therefore",
    "// absent. Regenerate with:",
    "//   WRITE_VENDORED=1 npx vitest run test/vendoring/validate-proto.test.ts",
  ].join("\n");
  return descriptorToProto(file_buf_validate_validate, { header });
}

/** Compile the vendored file with buf and return its FileDescriptorProto. */
function compileVendored(): FileDescriptorProto {
  const dir = mkdtempSync(join(tmpdir(), "vendored-validate-"));
  try {
    const out = join(dir, "image.binpb");
    // --as-file-descriptor-set drops buf's image-only extension (field 8042).
    buf(["build", "--path", vendoredPath, "--as-file-descriptor-set", "-o", out]);
    const set = fromBinary(FileDescriptorSetSchema, readFileSync(out));
    const file = set.file.find((f) => f.name === "buf/validate/validate.proto");
    if (file === undefined) throw new Error("buf/validate/validate.proto missing from the buf image");
    return file;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Drop what legitimately differs between a buf image and the embedded descriptor. */
function normalize(file: FileDescriptorProto): FileDescriptorProto {
  const c = clone(FileDescriptorProtoSchema, file);
  clearField(c, FileDescriptorProtoSchema.field.sourceCodeInfo); // comments/positions
  return c;
}

/** Where two byte strings first differ, with a little hex context, or undefined. */
function firstDifference(a: Uint8Array, b: Uint8Array): string | undefined {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  if (i === a.length && i === b.length) return undefined;
  const hex = (x: Uint8Array) => Buffer.from(x.subarray(Math.max(0, i - 16), i + 16)).toString("hex");
  return `byte ${i} of ${a.length} vs ${b.length}: ${hex(a)} vs ${hex(b)}`;
}

const registry = createRegistry(file_buf_validate_validate);
const asJson = (f: FileDescriptorProto) => toJson(FileDescriptorProtoSchema, f, { registry });

describe(vendoredPath, () => {
  beforeAll(() => {
    if (process.env.WRITE_VENDORED === "1") {
      mkdirSync(join(root, dirname(vendoredPath)), { recursive: true });
      writeFileSync(join(root, vendoredPath), renderVendored());
    }
  });

  it("compiles to the descriptor embedded in @bufbuild/protovalidate", () => {
    const actual = normalize(compileVendored());
    const expected = normalize(file_buf_validate_validate.proto);
    // Readable diff first, then the exact check (options are compared as raw bytes).
    expect(asJson(actual)).toStrictEqual(asJson(expected));
    const a = toBinary(FileDescriptorProtoSchema, actual);
    const b = toBinary(FileDescriptorProtoSchema, expected);
    expect(firstDifference(a, b)).toBeUndefined();
  });

  it("is what the generator produces", () => {
    expect(readFileSync(join(root, vendoredPath), "utf8")).toBe(renderVendored());
  });
});
