/**
 * Reading and cancelling the conversion tasks a project created. Transport-free:
 * the caller is already authenticated and the request validated. A task of
 * another project answers exactly like an unknown one.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  CancelConversionRequest,
  ConversionSchema,
  GetConversionRequest,
  WatchConversionRequest,
} from "../../../gen/whiteboard/v1/whiteboard_pb.js";
import { isTerminal } from "./follower.js";
import { conversionMessage, withState } from "./message.js";
import type { ConversionWatchHub } from "./watch-hub.js";
import { Failure } from "../failure.js";
import { type Caller, type ConversionBackend, type ConversionTaskRecord, QUEUED_STATUS, type Store } from "../ports.js";

type Conversion = MessageInitShape<typeof ConversionSchema>;

export class ConversionTasks {
  constructor(
    private readonly store: Store,
    private readonly backend: ConversionBackend,
    private readonly hub: ConversionWatchHub,
    private readonly now: () => number = Date.now,
  ) {}

  async getConversion(caller: Caller, req: GetConversionRequest): Promise<Conversion> {
    return this.message(await this.ownTask(caller, req.taskUuid));
  }

  /** The task now, then every change, until it ends (the stream then ends too). */
  async *watchConversion(caller: Caller, req: WatchConversionRequest, signal?: AbortSignal): AsyncIterable<Conversion> {
    const release = this.hub.open(caller.project);
    try {
      let record = await this.ownTask(caller, req.taskUuid);
      yield await this.message(record);
      while (!isTerminal(record.status)) {
        record = await this.hub.next(record.uuid, record.updatedAt, signal);
        yield await this.message(record);
      }
    } finally {
      release();
    }
  }

  /**
   * Takes a queued task out of its queue (Abort), or cancels a projector task
   * at the backend and answers the state the backend reports; the follower
   * records it at its next poll. A task that has ended is answered unchanged;
   * a legacy task cannot be cancelled once submitted.
   */
  async cancelConversion(caller: Caller, req: CancelConversionRequest, signal?: AbortSignal): Promise<Conversion> {
    let record = await this.ownTask(caller, req.taskUuid);
    if (record.status === QUEUED_STATUS) {
      const at = this.now();
      const ended = await this.store.conversionQueue.endQueued(
        record.uuid,
        { status: "Abort", percent: 0, pages: [] },
        at,
      );
      // Submitted meanwhile: cancel it at the backend, as any other.
      record = await this.ownTask(caller, req.taskUuid);
      if (ended === "ended") return conversionMessage(record);
    }
    if (isTerminal(record.status)) return conversionMessage(record);
    if (record.api !== "projector") {
      throw new Failure("failed_precondition", {
        detail: "tasks of the legacy conversion API cannot be cancelled",
      });
    }
    const whiteboard = await this.store.getWhiteboard(caller.project);
    if (whiteboard === undefined) {
      throw new Failure("permission_denied", { detail: "the whiteboard is not set up for this project" });
    }
    const state = await this.backend.cancelTask(
      {
        uuid: record.backendUuid ?? record.uuid,
        type: record.type,
        api: record.api,
        region: whiteboard.region,
        credentials: whiteboard.credentials,
      },
      signal,
    );
    return conversionMessage(withState(record, state, this.now()));
  }

  /** The message of the record, with its place in its queue while Queued. */
  private async message(record: ConversionTaskRecord): Promise<Conversion> {
    if (record.status !== QUEUED_STATUS) return conversionMessage(record);
    const position = await this.store.conversionQueue.queuePosition(record.project, record.uuid);
    return conversionMessage(record, position ?? 0);
  }

  private async ownTask(caller: Caller, uuid: string): Promise<ConversionTaskRecord> {
    const record = await this.store.conversions.getConversion(uuid);
    if (record === undefined || record.project !== caller.project) {
      throw new Failure("not_found", { detail: "this project has no conversion task with that uuid" });
    }
    return record;
  }
}
