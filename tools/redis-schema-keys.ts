// What docs/redis-schema.md says of each key: one entry per key builder of
// src/store/schema/keys.ts, so a new builder does not compile until it is
// documented. The key names themselves come from the builders, called with
// placeholders (tools/redis-schema-doc.ts).

import {
  ADMIN_EVENTS_MAXLEN,
  CONVERSION_CHANGES_MAXLEN,
  hashPassphrase,
  type KeySchema,
  MUTE_EVENTS_MAXLEN,
  WHITEBOARD_EVENTS_MAXLEN,
} from "../src/store/schema/keys.js";

/** The members of `KeySchema` that are not key builders: SCAN patterns, key parsers, and a bundle of builders. */
type NotAKey =
  | "prefix"
  | "passphraseKeys"
  | "passphraseDigestOf"
  | "passphraseDigests"
  | "passphraseByHash"
  | "passphrasePattern"
  | "passphraseHashOf"
  | "channelRecordPattern"
  | "channelRecordOf"
  | "channelIndexPattern"
  | "channelIndexOf"
  | "whiteboardPattern"
  | "whiteboardOf"
  | "channelKeys"
  | "channelDataKeys";

export type KeyName = Exclude<keyof KeySchema, NotAKey>;

export type RedisType = "hash" | "stream" | "sorted set" | "string" | "sharded pub/sub channel";

export interface KeyDoc {
  /** The key, from its builder called with placeholders. */
  readonly key: (keys: KeySchema) => string;
  readonly type: RedisType;
  /** What it holds (the fields of a hash or stream are listed under "Record layouts"). */
  readonly holds: string;
  readonly writtenBy: string;
  readonly expires: string;
}

/**
 * `key` with the hash a builder made of `clear` shown as `shown`: a builder
 * that stops hashing it, or hashes it otherwise, makes the generator fail.
 */
export function hashShown(key: string, clear: string, shown: string): string {
  const hash = hashPassphrase(clear);
  if (!key.includes(hash)) throw new Error(`${key}: the key builder no longer carries the sha256 hex of ${clear}`);
  return key.replace(hash, shown);
}

const UNTIL_CHANNEL_EXPIRES =
  "with the channel: when it has an expiry, mutes give this key the channel's (`PEXPIREAT`); else never";

/** Every key, in the order the document lists them. */
export const KEYS: Readonly<Record<KeyName, KeyDoc>> = {
  passphrase: {
    key: (k) =>
      k
        .passphrase("<project>", "<passphrase>")
        .replace(k.passphraseDigestOf("<project>", "<passphrase>"), "<digest of project and passphrase>"),
    type: "hash",
    holds:
      "what one passphrase opens: project, channel and role, and `key`, the id of the `PASSPHRASE_KEYS` key of its digest: HMAC-SHA256 under that key of the JSON `[project, sha256 hex of passphrase]`. A record under the bare sha256 hex of the passphrase (no `key` field: written before keys, or by another service without them) still opens its channel, and is moved to the current key's digest when found, or by `boardline channel reindex`",
    writtenBy: "CreateChannel and RotatePassphrase (`boardline channel create|rotate`); other services directly",
    expires: "when the channel expires, if it has an expiry (`expire_at`, `PEXPIREAT`); else never",
  },
  whiteboard: {
    key: (k) => k.whiteboard("<project>"),
    type: "hash",
    holds: "the project's whiteboard settings: region, Netless credentials and conversion QPS",
    writtenBy: "SetWhiteboardSettings (`boardline whiteboard set`); other services directly",
    expires: "never",
  },
  channelIndex: {
    key: (k) => k.channelIndex("<project>"),
    type: "sorted set",
    holds:
      "the project's channel index: member = channel id, score `0` (listed in byte order with `ZRANGEBYLEX`). A channel another writer creates is listed once `boardline channel reindex` (or `channel doctor`) has run",
    writtenBy: "CreateChannel and DeleteChannel; `boardline channel reindex` and `channel doctor`",
    expires: "never: an expired channel's member stays until `boardline channel doctor` removes it",
  },
  adminEvents: {
    key: (k) => k.adminEvents("<project>"),
    type: "stream",
    holds: `the project's audit trail: one entry per admin change, never a passphrase or a secret; \`MAXLEN ~ ${ADMIN_EVENTS_MAXLEN}\``,
    writtenBy: "ChannelAdminService",
    expires: "never",
  },
  channelRecord: {
    key: (k) => k.channelRecord("<project>", "<channel>"),
    type: "hash",
    holds:
      "the channel's own record: who created it and when, its expiry, and the sha256 hex of every passphrase that opens it. It shares the channel's hash tag, so the mute script can read its expiry",
    writtenBy: "ChannelAdminService; `boardline channel reindex` for channels other writers created",
    expires: "when the channel expires, if it has an expiry (`PEXPIREAT`); else never",
  },
  pstnMute: {
    key: (k) => k.pstnMute("<project>", "<channel>"),
    type: "hash",
    holds: "the channel's mute state: `<uid>` → `1` muted, `0` unmuted",
    writtenBy: "Mute (the mute script); other writers may set states directly",
    expires: UNTIL_CHANNEL_EXPIRES,
  },
  pstnMuteMeta: {
    key: (k) => k.pstnMuteMeta("<project>", "<channel>"),
    type: "hash",
    holds:
      '`<uid>` → JSON `{"at":<ms>,"by":"<sub>","event_id":"<stream id>"}`, plus `"setter":"self"` or `"policy"` when the participant or the policy set it: who set the uid\'s state, when, and its event. A state another writer set without it reads with `updated_at`/`updated_by` absent',
    writtenBy: "Mute (the mute script, with the state) and the line scripts",
    expires: UNTIL_CHANNEL_EXPIRES,
  },
  pstnEvents: {
    key: (k) => k.pstnEvents("<project>", "<channel>"),
    type: "stream",
    holds: `one entry per mute change (no \`kind\` field) or line event (\`kind\`: join, leave, hand, policy, mute_all); \`MAXLEN ~ ${MUTE_EVENTS_MAXLEN}\`. The telephone gateway consumes it (e.g. \`XREAD BLOCK 0 STREAMS <this key> $\`), or the API's WatchPstnEvents`,
    writtenBy: "Mute (the mute script, with the state) and the line scripts",
    expires: UNTIL_CHANNEL_EXPIRES,
  },
  pstnNotify: {
    key: (k) => k.pstnNotify("<project>", "<channel>"),
    type: "sharded pub/sub channel",
    holds:
      "nothing is stored: the mute script `SPUBLISH`es each new event's id here (same hash tag, so same slot), and the watch hubs `SSUBSCRIBE` to the channels they watch",
    writtenBy: "Mute (the mute script)",
    expires: "—",
  },
  pstnLine: {
    key: (k) => k.pstnLine("<project>", "<channel>"),
    type: "hash",
    holds:
      '`<uid>` → JSON `{"on":1|0,"seq":"<20 digits>","caller":"<masked caller id>","joined":<ms>,"hand":1|0,"hand_at":<ms>}`: whether the participant is on the line, and the gateway\'s last sequence applied to them (kept after they leave, so a late report stays late)',
    writtenBy: "ReportLine, SyncLine, LowerHands and the lease sweep (the line scripts)",
    expires: UNTIL_CHANNEL_EXPIRES,
  },
  pstnLeases: {
    key: (k) => k.pstnLeases("<project>", "<channel>"),
    type: "sorted set",
    holds:
      "member = uid of a participant on the line, score = when their presence lease runs out (ms, the Redis clock): `PSTN_PRESENCE_TTL_SECONDS` after their last report",
    writtenBy: "ReportLine, SyncLine and the lease sweep",
    expires: UNTIL_CHANNEL_EXPIRES,
  },
  pstnPolicy: {
    key: (k) => k.pstnPolicy("<project>", "<channel>"),
    type: "hash",
    holds: "the line's policy: `mute_on_join` and `allow_self_unmute`, `1` or `0` (missing: `0` and `1`)",
    writtenBy: "SetPstnPolicy and MuteAll",
    expires: UNTIL_CHANNEL_EXPIRES,
  },
  pstnLeasesDue: {
    key: (k) => k.pstnLeasesDue(),
    type: "sorted set",
    holds:
      "member = JSON `[project, channel]` of a channel with participants on the line, score = when the sweep next looks at it (ms)",
    writtenBy:
      "ReportLine and SyncLine add a channel before they write its line; the lease sweep scores it, and removes it once two sweeps in a row found the line empty",
    expires: "never",
  },
  pstnLeaseNotes: {
    key: (k) => k.pstnLeaseNotes(),
    type: "hash",
    holds:
      "member = JSON `[project, channel]` → `<reports>:<reports when last seen empty>`: how the sweep tells a line that stayed empty from one a report just filled",
    writtenBy: "as `pstn-leases:due`",
    expires: "never; the sweep removes a field with its member",
  },
  whiteboardEvents: {
    key: (k) => k.whiteboardEvents("<project>", "<channel>"),
    type: "stream",
    holds: `one entry per conversion task of the channel that reached its end; \`MAXLEN ~ ${WHITEBOARD_EVENTS_MAXLEN}\``,
    writtenBy: "the conversion follower, once a task ends",
    expires: "never; DeleteChannel removes it, and so does `boardline channel doctor` once an API channel has expired",
  },
  conversion: {
    key: (k) => k.conversion("<task uuid>"),
    type: "hash",
    holds:
      "one conversion task: where it belongs, its type and API, its latest state and pages; while queued its request (`resource`, sealed; `scale`; `reuse_key`) and `attempts`/`submitting_at`; once submitted `backend_uuid` and `submitted_at`",
    writtenBy:
      "ConvertFile creates it (status `Queued`); the submitters record the submission; the conversion follower saves each state (only while it holds the lease)",
    expires: "`CONVERSION_RETENTION_DAYS` after its last change",
  },
  conversionChanges: {
    key: (k) => k.conversionChanges("<task uuid>"),
    type: "stream",
    holds: `one entry per change of the task's status or percent; \`MAXLEN ~ ${CONVERSION_CHANGES_MAXLEN}\``,
    writtenBy: "the conversion follower, with each state it saves",
    expires: "with the task",
  },
  conversionLease: {
    key: (k) => k.conversionLease("<task uuid>"),
    type: "string",
    holds: "the id of the instance polling the task",
    writtenBy: "the conversion follower (`SET NX PX`)",
    expires: "on its own, when the lease runs out (`PX`)",
  },
  conversionsDue: {
    key: (k) => k.conversionsDue(),
    type: "sorted set",
    holds:
      "member = task uuid, score = when it is next due for a poll (ms; while a poll is under way, when its lease runs out); a task leaves it at its end",
    writtenBy:
      "ConvertFile adds a task; the conversion follower scores and removes it; a conversion webhook makes it due now",
    expires: "never",
  },
  conversionWebhook: {
    key: (k) => k.conversionWebhook("<webhook id>"),
    type: "string",
    holds: "the task uuid a conversion webhook id stands for (with `CONVERSION_WEBHOOK_BASE`)",
    writtenBy: "ConvertFile, once",
    expires: "`CONVERSION_RETENTION_DAYS` after it is written",
  },
  conversionQueue: {
    key: (k) => k.conversionQueue("<project>"),
    type: "sorted set",
    holds: "the project's queued task ids, scored in arrival order (the lowest is submitted next)",
    writtenBy: "ConvertFile (adds), the submitters (remove once submitted), CancelConversion (removes)",
    expires: "never (empty: deleted)",
  },
  conversionPace: {
    key: (k) => k.conversionPace("<project>"),
    type: "string",
    holds:
      "while the project's next submission must wait: the id of the task whose turn started the pace (1 s / `conversion_qps`), or `1` after a refusal (longer)",
    writtenBy: "the submitters",
    expires: "when the wait is over (PX)",
  },
  conversionQueueLease: {
    key: (k) => k.conversionQueueLease("<project>"),
    type: "string",
    holds: "the owner id of the submitter draining the project's queue",
    writtenBy: "the submitters",
    expires: "on its own, when the lease runs out (`PX`)",
  },
  conversionReuse: {
    key: (k) => k.conversionReuse("<project>", "<sha256 hex of the request>"),
    type: "string",
    holds: "the task id an identical request (resource URL, type, scale) of the project reuses",
    writtenBy: "ConvertFile",
    expires: "`CONVERSION_RETENTION_DAYS` after it is written",
  },
  conversionQueues: {
    key: (k) => k.conversionQueues(),
    type: "sorted set",
    holds: "every project with queued tasks, scored by when its queue is next due (ms)",
    writtenBy: "ConvertFile (adds), the submitters",
    expires: "never (empty: deleted)",
  },
  guesses: {
    key: (k) => hashShown(k.guesses("<caller>"), "<caller>", "<sha256 hex of caller>"),
    type: "sorted set",
    holds:
      "the guesses one caller took in the sliding window (mutes, state reads and conversions together): a slot per call, scored by the time (ms) it was taken; a right passphrase removes its slot",
    writtenBy: "every request that names a passphrase",
    expires: "`GUESS_WINDOW_SECONDS` after the last guess taken; older guesses drop out when the next is taken",
  },
  idempotency: {
    key: (k) =>
      hashShown(
        k.idempotency("<project>", "<sub>", "<key>"),
        JSON.stringify(["<sub>", "<key>"]),
        '<sha256 hex of ["<sub>","<key>"]>',
      ),
    type: "hash",
    holds: "a ConvertFile sent with an `Idempotency-Key`: its state, and its answer once it has one",
    writtenBy: "ConvertFile with an `Idempotency-Key` (only boardline writes these)",
    expires: "when its lock runs out, or `IDEMPOTENCY_TTL_HOURS` after the answer",
  },
};
