/**
 * Convert a document for the whiteboard. Transport-free: the caller is
 * already authenticated and the request already validated against the proto
 * rules (src/server/call-pipeline.ts does both, in that order).
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ConvertFileRequest, ConvertFileResponseSchema } from "../../gen/whiteboard/v1/whiteboard_pb.js";
import { Failure } from "./failure.js";
import type { PassphraseGuard } from "./passphrase-guard.js";
import type { Caller, ConversionBackend, ConversionType, Store } from "./ports.js";

/** How long after its creation a task is first asked about (the follower's own settings come later). */
export class WhiteboardConversions {
  constructor(
    private readonly store: Store,
    private readonly backend: ConversionBackend,
    private readonly guard: PassphraseGuard,
    /** The follower first asks about a new task this long after creating it (CONVERSION_POLL_FIRST_MS). */
    private readonly firstPollMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  async convertFile(
    caller: Caller,
    req: ConvertFileRequest,
    signal?: AbortSignal,
  ): Promise<MessageInitShape<typeof ConvertFileResponseSchema>> {
    const settings = await this.store.getWhiteboard(caller.project);
    if (settings === undefined) {
      throw new Failure("permission_denied", { detail: "the whiteboard is not set up for this project" });
    }
    // The lock-out check and the lookup run side by side: one round trip of latency.
    const [, record] = await Promise.all([this.guard.check(caller), this.store.lookupPassphrase(req.passphrase)]);
    if (record === undefined || record.project !== caller.project) {
      await this.guard.recordMiss(caller);
      throw new Failure("not_found", { detail: "no channel of this project has that passphrase" });
    }
    // Validation allows only these two values.
    const type = req.conversionType as ConversionType;
    const task = await this.backend.createTask(
      {
        resourceUrl: req.resourceUrl,
        type,
        ...(req.conversionScale === undefined ? {} : { scale: req.conversionScale }),
        region: settings.region,
        credentials: settings.credentials,
      },
      signal,
    );
    const createdAt = this.now();
    await this.store.conversions.recordConversion(
      {
        uuid: task.uuid,
        project: record.project,
        channel: record.channel,
        type,
        api: task.api,
        status: task.status,
        percent: 0,
        pages: [],
        createdAt,
        updatedAt: createdAt,
        by: caller.subject,
      },
      createdAt + this.firstPollMs,
    );
    return { taskUuid: task.uuid, status: task.status };
  }
}
