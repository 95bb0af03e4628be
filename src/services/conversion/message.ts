/** A conversion task record as the API's `Conversion` message (whiteboard.v1). */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ConversionSchema } from "../../../gen/whiteboard/v1/whiteboard_pb.js";
import type { ConversionState, ConversionTaskRecord } from "../ports.js";

/** `queuePosition`: the task's place in its project's queue while Queued (from 1), else 0. */
export function conversionMessage(
  record: ConversionTaskRecord,
  queuePosition = 0,
): MessageInitShape<typeof ConversionSchema> {
  return {
    taskUuid: record.uuid,
    type: record.type,
    status: record.status,
    progressPercent: Math.round(record.percent),
    pageCount: record.pageCount ?? 0,
    pages: record.pages.map((p) => ({
      page: p.page,
      url: p.url ?? "",
      width: p.width ?? 0,
      height: p.height ?? 0,
      previewUrl: p.previewUrl ?? "",
    })),
    prefix: record.prefix ?? "",
    failedReason: record.failedReason ?? "",
    createdAt: timestampFromMs(record.createdAt),
    updatedAt: timestampFromMs(record.updatedAt),
    backendTaskUuid: record.backendUuid ?? "",
    queuePosition,
  };
}

/** The record with a newer state applied (as the follower would save it). */
export function withState(record: ConversionTaskRecord, state: ConversionState, at: number): ConversionTaskRecord {
  return {
    ...record,
    status: state.status,
    percent: state.percent,
    pages: state.pages,
    updatedAt: at,
    ...(state.pageCount === undefined ? {} : { pageCount: state.pageCount }),
    ...(state.prefix === undefined ? {} : { prefix: state.prefix }),
    ...(state.failedReason === undefined ? {} : { failedReason: state.failedReason }),
  };
}
