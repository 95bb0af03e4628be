// The field layouts docs/redis-schema.md lists: the field names come from the
// record writers of src/store/schema/ (called with placeholders, every optional
// part given), the meanings from here. A field a writer writes and this file
// does not explain, or one it explains and no writer writes, fails the generator.

import {
  adminEventFields,
  newChannelFields,
  PASS_FIELD_PREFIX,
  PENDING_FIELD,
} from "../src/store/schema/channel-index-records.js";
import { muteEventFields, passphraseFields, whiteboardFields } from "../src/store/schema/channel-records.js";
import {
  ANNOUNCED_FIELD,
  changeFields,
  conversionFields,
  whiteboardEventFields,
} from "../src/store/schema/conversion-records.js";
import { doneFields, pendingFields } from "../src/store/schema/idempotency-records.js";
import { DEFAULT_CONVERSION_QPS, MAX_CONVERSION_QPS } from "../src/services/channel/ports.js";
import { REGIONS, TERMINAL_CONVERSION_STATUSES } from "../src/services/conversion/ports.js";
import type { KeyName } from "./redis-schema-keys.js";
import { code } from "./markdown.js";

export interface RecordLayout {
  /** The field names the writers write. */
  readonly fields: () => readonly string[];
  /** What each field holds, in the order the document lists them. */
  readonly meanings: Readonly<Record<string, string>>;
}

const SHA = "<sha256 hex of passphrase>";

const task: Parameters<typeof conversionFields>[0] = {
  uuid: "<task uuid>",
  project: "<project>",
  channel: "<channel>",
  type: "static",
  api: "projector",
  status: "Finished",
  percent: 100,
  pageCount: 1,
  pages: [],
  prefix: "<prefix>",
  failedReason: "<reason>",
  createdAt: 0,
  updatedAt: 0,
  by: "<sub>",
};
const change: Parameters<typeof muteEventFields>[0] = {
  project: "p",
  channel: "c",
  uid: "u",
  mute: true,
  by: "s",
  at: 0,
};
const claim: Parameters<typeof pendingFields>[0] = { owner: "o", fingerprint: "f", lockMs: 1, at: 0 };
const keys = (...records: ReadonlyArray<Readonly<Record<string, string>>>) => [
  ...new Set(records.flatMap((r) => Object.keys(r))),
];

/** The layouts of the hashes and streams whose fields are fixed, by key. */
export const LAYOUTS: Partial<Readonly<Record<KeyName, RecordLayout>>> = {
  passphrase: {
    fields: () => keys(passphraseFields({ project: "p", channel: "c", role: "host", expireAt: 0 })),
    meanings: {
      project: "the project id",
      channel: "the channel id",
      role: "`host` or `attendee`",
      expire_at: "when the channel expires (ms); absent: never",
    },
  },
  whiteboard: {
    fields: () =>
      keys(
        whiteboardFields({ region: "eu", credentials: { sdkToken: "t" }, conversionQps: 1 }, { by: "s", at: 0 }).set,
        whiteboardFields({ region: "eu", credentials: { accessKey: "a", secretKey: "s" } }, { by: "s", at: 0 }).set,
      ),
    meanings: {
      enabled: "`1`; any other value means no whiteboard",
      region: `one of ${REGIONS.map(code).join(", ")}`,
      conversion_qps:
        "how many conversion (create) requests per second the Netless backend takes from the project, as its plan " +
        `allows: a decimal whole number from \`1\` to \`${MAX_CONVERSION_QPS}\`, in clear (not a secret); absent or ` +
        `anything else: \`${DEFAULT_CONVERSION_QPS}\`, the default plan. SetWhiteboardSettings without it removes it`,
      sdk_token: "a Netless SDK token, sealed under `SECRETS_KEYS` (see below); used when present",
      access_key:
        "with `secret_key`: a Netless key pair, from which boardline signs short-lived `writer` SDK tokens itself; in clear (it signs nothing)",
      secret_key: "see `access_key`; sealed under `SECRETS_KEYS` (see below)",
      updated_at: "when it was set through the API (ms)",
      updated_by: "who set it through the API (the token's `sub`)",
    },
  },
  channelRecord: {
    fields: () =>
      keys(
        newChannelFields({
          createdAt: 0,
          createdBy: "s",
          expireAt: 0,
          passphrases: [{ sha: SHA, role: "host" }],
          pendingSince: 0,
        }),
      ),
    meanings: {
      created_at: "when it was created (ms)",
      created_by: "who created it (the token's `sub`)",
      expire_at: "when the channel expires (ms); absent: never",
      [`${PASS_FIELD_PREFIX}${SHA}`]: "`host` or `attendee`: one field for every passphrase that opens the channel",
      [PENDING_FIELD]:
        "`<create|rotate|delete>@<ms>[@<sha256 hex>]` while a write is under way; `boardline channel doctor` finishes or undoes a write that was interrupted",
    },
  },
  adminEvents: {
    fields: () => keys(adminEventFields({ at: 0, by: "s", action: "a", channel: "c", detail: "d" })),
    meanings: {
      at: "when (ms)",
      by: "who (the token's `sub`)",
      action: "e.g. `channel.create`, `channel.rotate`, `channel.delete`, `whiteboard.set`, `whiteboard.clear`",
      channel: "the channel, when the change is of one",
      detail: "e.g. the role rotated, or the kind of whiteboard credential set",
    },
  },
  pstnEvents: {
    fields: () => keys(muteEventFields(change)),
    meanings: {
      uid: "the participant",
      mute: "`1` muted, `0` unmuted",
      by: "who (the caller's `sub`)",
      at: "when (ms)",
    },
  },
  whiteboardEvents: {
    fields: () => keys(whiteboardEventFields(task, "Finished", 0)),
    meanings: {
      task_uuid: "the conversion task",
      status: `how it ended: ${TERMINAL_CONVERSION_STATUSES.map(code).join(", ")}`,
      type: "`static` or `dynamic`",
      page_count: "the number of pages, when known",
      by: "who started the conversion (the caller's `sub`)",
      at: "when it ended (ms)",
    },
  },
  conversion: {
    fields: () => [...keys(conversionFields(task)), ANNOUNCED_FIELD],
    meanings: {
      project: "the project id",
      channel: "the channel id",
      type: "`static` or `dynamic`",
      api: "`projector` or `legacy` (the Netless API the task was created on); absent → `legacy`",
      status: "the task's status, as the conversion backend said",
      percent: "0–100; absent → 0 (100 when `Finished`)",
      pages: "JSON: static `[{page,url,width,height}]`, dynamic `[{page,preview_url}]`",
      page_count: "the number of pages, when known",
      prefix: "dynamic conversions: where the converted files live",
      failed_reason: "why it failed, when it did",
      created_at: "when it was created (ms)",
      updated_at: "its last change (ms); absent → `created_at`",
      by: "who started it (the caller's `sub`)",
      [ANNOUNCED_FIELD]: "`1` once its end is on the channel's whiteboard-events stream",
    },
  },
  conversionChanges: {
    fields: () => keys(changeFields("Finished", 100, 0)),
    meanings: { status: "the status", percent: "0–100", at: "when (ms)" },
  },
  idempotency: {
    fields: () => keys(pendingFields(claim), doneFields(claim, "a")),
    meanings: {
      state: "`pending` while the first call works, `unknown` after it ended with an unknown outcome, `done`",
      fingerprint: "sha256 hex of the request, passphrase included",
      owner: "the call holding a `pending` or `unknown` record",
      created_at: "when the first call claimed the key (ms)",
      answer: 'when `done`: the answer, JSON `{"task_uuid":"…","status":"…"}`',
    },
  },
};

/** The layout's fields with their meanings; throws when the writers and the meanings disagree. */
export function describedFields(name: string, layout: RecordLayout): Array<[field: string, meaning: string]> {
  const fields = layout.fields();
  const unexplained = fields.filter((f) => layout.meanings[f] === undefined);
  const unwritten = Object.keys(layout.meanings).filter((f) => !fields.includes(f));
  if (unexplained.length > 0 || unwritten.length > 0) {
    throw new Error(
      `${name}: fields written but not explained: [${unexplained.join(", ")}]; explained but not written: [${unwritten.join(", ")}]`,
    );
  }
  return Object.entries(layout.meanings);
}
