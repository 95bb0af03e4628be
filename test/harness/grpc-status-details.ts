/**
 * `grpc-status-details-bin` as a gRPC client reads it: a google.rpc.Status
 * (generated from the vendored proto/google/rpc/status.proto) whose details
 * carry boardline's ErrorInfo.
 */
import { fromBinary } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { type ErrorInfo, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { type Status, StatusSchema } from "../../gen/google/rpc/status_pb.js";

export function statusDetails(bin: Uint8Array): Status {
  return fromBinary(StatusSchema, bin);
}

/** Boardline's ErrorInfo (domain "boardline") among the details; undefined when there is none. */
export function boardlineErrorInfo(bin: Uint8Array): ErrorInfo | undefined {
  for (const detail of statusDetails(bin).details) {
    const info = anyUnpack(detail, ErrorInfoSchema);
    if (info?.domain === "boardline") return info;
  }
  return undefined;
}
