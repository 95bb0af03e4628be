/**
 * The one table from the operation names the store's calls pass to
 * `RedisCalls.call` / `write` to the family their command duration is
 * labelled with: the names are many and grow, the families few and fixed.
 * A name missing here is counted as `other`, never as a label of its own.
 */
import type { CommandFamily } from "../../services/store-observer.js";

const FAMILIES: Readonly<Record<CommandFamily, readonly string[]>> = {
  mute: ["setMute", "getPstnSnapshot"],
  line: [
    "reportLine",
    "syncLine",
    "muteAll",
    "setPstnPolicy",
    "lowerHands",
    "expireLeases",
    "takeDueLines",
    "rescheduleLine",
    "noteLine",
  ],
  conversion: [
    "recordConversion",
    "getConversion",
    "setConversionDue",
    "removeConversionDue",
    "claimDueConversions",
    "renewConversionLease",
    "conversionLease",
    "releaseConversionLease",
    "saveConversionState",
    "markConversionAnnounced",
    "announceConversion",
    "recordConversionWebhook",
    "conversionWebhookTask",
    "wakeConversion",
    "readConversionChanges",
  ],
  queue: [
    "enqueueConversion",
    "indexConversionQueue",
    "claimDueQueues",
    "releaseConversionQueue",
    "takeConversionTurn",
    "holdConversionTurns",
    "conversionQueuePosition",
    "conversionQueueLength",
    "dequeueConversion",
    "markConversionSubmitting",
    "recordConversionSubmission",
    "endQueuedConversion",
  ],
  channel: [
    "lookupPassphrase",
    "getWhiteboard",
    "readChannelRecord",
    "readPassphrase",
    "readWhiteboardRecord",
    "writeChannelRecord",
    "dropChannelFields",
    "indexChannel",
    "unindexChannel",
    "listChannels",
    "claimPassphrase",
    "releasePassphrase",
    "removeChannelData",
    "appendAdminEvent",
  ],
  idempotency: ["claimIdempotencyKey", "completeIdempotencyKey", "markIdempotencyKeyUnknown", "releaseIdempotencyKey"],
  guess: ["takeGuess", "returnGuess", "keepGuess"],
  watch: ["readPstnEvents"],
  admin: [
    "deleteChannel",
    "setWhiteboard",
    "resealWhiteboard",
    "clearWhiteboard",
    "getMuteState",
    "getMuteEvents",
    "getWhiteboardEvents",
    "scan",
  ],
  other: ["ping"],
};

const BY_OPERATION = new Map<string, CommandFamily>(
  Object.entries(FAMILIES).flatMap(([family, operations]) =>
    operations.map((operation) => [operation, family as CommandFamily] as const),
  ),
);

/** The family of an operation name; `other` for one the table does not know. */
export function commandFamily(operation: string): CommandFamily {
  return BY_OPERATION.get(operation) ?? "other";
}
