/**
 * Where the two operations are served, spelled once for every suite: the JSON
 * routes (the `google.api.http` annotations of the protos) and the RPC paths
 * (`/<package>.<Service>/<Method>`, for gRPC, gRPC-Web and Connect). They are
 * part of the API contract, so they are written out here rather than read from
 * the generated descriptors; test/e2e/routes.test.ts checks that the two agree.
 */

/** The two operations of the contract. */
export type Op = "mute" | "convert";

export const OPS: readonly Op[] = ["mute", "convert"];

/** The JSON routes (POST). */
export const ROUTES = {
  mute: "/v1/channel/pstn/mute",
  convert: "/v1/whiteboard/fileconvert",
} as const satisfies Record<Op, string>;

/** The RPC paths of the same operations. */
export const RPC_PATHS = {
  mute: "/channel.v1.PstnService/Mute",
  convert: "/whiteboard.v1.WhiteboardService/ConvertFile",
} as const satisfies Record<Op, string>;
