/**
 * The generated protobuf messages and services of boardline's API (gen/, from proto/), as built into
 * dist/gen: what any client of the API would use. Typed by gen/ itself.
 */
import { fromBuild } from "./build.mjs";

export const {
  LineOutcome,
  MuteAllRequestSchema,
  MuteAllResponseSchema,
  MuteRequestSchema,
  MuteResponseSchema,
  PstnEventSchema,
  ReportLineRequestSchema,
  ReportLineResponseSchema,
  WatchPstnEventsRequestSchema,
} = /** @type {typeof import("../../gen/channel/v1/pstn_pb.js")} */ (await fromBuild("gen/channel/v1/pstn_pb.js"));
export const {
  ConversionSchema,
  ConvertFileRequestSchema,
  ConvertFileResponseSchema,
  GetConversionRequestSchema,
  WhiteboardService,
} = /** @type {typeof import("../../gen/whiteboard/v1/whiteboard_pb.js")} */ (
  await fromBuild("gen/whiteboard/v1/whiteboard_pb.js")
);
