/**
 * The route constants every suite uses (test/harness/routes.ts) are the ones
 * the protos declare: the `google.api.http` annotation of each method, and
 * its gRPC path from the descriptor.
 */
import { type DescMethod, getOption, hasOption } from "@bufbuild/protobuf";
import { expect, test } from "vitest";
import { PstnService } from "../../gen/channel/v1/pstn_pb.js";
import { http } from "../../gen/google/api/annotations_pb.js";
import { WhiteboardService } from "../../gen/whiteboard/v1/whiteboard_pb.js";
import { type Op, OPS, ROUTES, RPC_PATHS } from "../harness/routes.js";

const METHODS: Record<Op, DescMethod> = {
  mute: PstnService.method.mute,
  convert: WhiteboardService.method.convertFile,
};

test.each(OPS)("%s: ROUTES is the google.api.http post path", (op) => {
  const method = METHODS[op];
  expect(hasOption(method, http)).toBe(true);
  const rule = getOption(method, http);
  expect({ case: rule.pattern.case, path: rule.pattern.value }).toEqual({ case: "post", path: ROUTES[op] });
});

test.each(OPS)("%s: RPC_PATHS is /<service type name>/<method name>", (op) => {
  const method = METHODS[op];
  expect(`/${method.parent.typeName}/${method.name}`).toBe(RPC_PATHS[op]);
});
