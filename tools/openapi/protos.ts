// The protos as a protobuf-es registry, with their comments: `buf build` (the
// buf of devDependencies) compiles the module in buf.yaml, source info included
// — the descriptors embedded in gen/ carry no comments.

import { execFileSync } from "node:child_process";
import { createFileRegistry, type FileRegistry, fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";

export function loadProtos(): FileRegistry {
  const bytes = execFileSync("node_modules/.bin/buf", ["build", "--as-file-descriptor-set", "-o", "-"], {
    maxBuffer: 64 * 1024 * 1024,
  });
  return createFileRegistry(fromBinary(FileDescriptorSetSchema, new Uint8Array(bytes)));
}
