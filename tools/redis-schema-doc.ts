// Renders docs/redis-schema.md: the key names from the key builders of
// src/store/schema/keys.ts (called with placeholders, under the default
// prefix), what each key holds from tools/redis-schema-keys.ts, and the field
// layouts from the record writers (tools/redis-schema-records.ts).
// `npm run generate` writes it; test/docs/redis-schema-doc.test.ts fails when
// the committed file is stale.

import { DEFAULT_KEY_PREFIX, keySchema } from "../src/store/schema/keys.js";
import { KEYS, type KeyName } from "./redis-schema-keys.js";
import { describedFields, LAYOUTS } from "./redis-schema-records.js";
import { cell, code } from "./markdown.js";

export const REDIS_SCHEMA_DOC = "docs/redis-schema.md";

const row = (cells: readonly string[]) => `| ${cells.map(cell).join(" | ")} |`;

const names = Object.keys(KEYS) as KeyName[];
const keyOf = (name: KeyName) => KEYS[name].key(keySchema());

/** The table of every key: name, type, what it holds, who writes it, when it expires. */
export function renderKeyTable(): string {
  const lines = ["| key | type | holds | written by | expires |", "|---|---|---|---|---|"];
  for (const name of names) {
    const doc = KEYS[name];
    lines.push(row([code(keyOf(name)), doc.type, doc.holds, doc.writtenBy, doc.expires]));
  }
  return lines.join("\n");
}

/** One section per hash or stream with fixed fields, in the key table's order. */
export function renderLayouts(): string {
  const sections: string[] = [];
  for (const name of names) {
    const layout = LAYOUTS[name];
    if (layout === undefined) continue;
    const lines = [`### ${code(keyOf(name))} (${KEYS[name].type})`, "", "| field | holds |", "|---|---|"];
    for (const [field, meaning] of describedFields(name, layout)) lines.push(row([code(field), meaning]));
    sections.push(lines.join("\n"));
  }
  return sections.join("\n\n");
}

/** The whole of docs/redis-schema.md. */
export function renderRedisSchemaDoc(): string {
  const k = keySchema();
  return `<!-- generated from src/store/schema/keys.ts and the record writers of src/store/schema/ by \`npm run generate\` (tools/redis-schema-*.ts); edit those, not this file -->
# Redis schema

## Data in Redis (for other writers)

Writing these keys directly is supported, and this is the schema boardline reads and writes. But the
API is the way: ChannelAdminService keeps the indexes, the expiry and the audit trail that direct
writes skip, and does not tie your service to these key names, hash tags and record formats.
Channels written directly open with their passphrases as usual, but they are not indexed: the API's
Get, List, Rotate and Delete (and the CLI's \`channel show|list|rotate|delete\`) find them only once
\`boardline channel reindex\` has indexed them. Run it after writing channels directly; it is
resumable and safe while serving.

Placeholders are in \`<…>\`; times are milliseconds since the epoch. Passphrases are never in a key
or a record in clear: keys carry their sha256 hex (lowercase, of the UTF-8 bytes). Every key starts
with \`REDIS_KEY_PREFIX\`, ${code(DEFAULT_KEY_PREFIX)} by default and below.

${renderKeyTable()}

## Hash tags

Redis Cluster hashes only the text between the first \`{\` and the first \`}\` after it. A channel's
keys (its record, mute state, meta, both event streams and its notify channel) share the tag
${code(`{<project>/<channel>}`)}, so the mute script can write them in one step; a task's record,
changes stream and lease share ${code("{<task uuid>}")}, so one script saves a state and its change;
a project's whiteboard record, channel index and admin-events stream share ${code("{<project>}")},
and so do its idempotency records, each addressed alone. ${code(k.conversionsDue())} (one key for
every task) and the channel's whiteboard-events stream are in other slots than the task's, so a
task's end reaches them by separate commands.

An id that starts with \`}\` gives an empty tag \`{}\`: Cluster then hashes the whole key and a
channel's keys land in different slots (the mute script fails with CROSSSLOT). A \`/\` in a project id
makes \`a/b\` + \`c\` and \`a\` + \`b/c\` the same channel key. So a project id never holds \`/\`,
and a channel's tag splits at its first \`/\`: boardline refuses project ids with braces, \`/\` or
control characters wherever one names a key — a token's project claim (401), the admin API and the
CLI — and channel ids with braces or control characters where a caller or operator names one. A
passphrase record whose project is such an id is treated as absent; channel ids of records other
services wrote are used verbatim (braces there cost only the slot, never another channel's keys).

## Record layouts

A record that does not match its layout (e.g. \`role\` not \`host\`/\`attendee\`, \`enabled\` not \`1\`, a
region outside the list) is treated as absent, never half-used. A key of the wrong type reads as
empty.

${renderLayouts()}

## Writing alongside boardline

- A mute is one script: it checks the key types, sets the state, appends the event, sets the meta
  with the event's id, publishes the id on the notify channel and gives the keys the channel's
  expiry, all or nothing. A state another writer sets without meta reads with
  \`updated_at\`/\`updated_by\` absent; a state set without an event shows in snapshots
  (GetPstnState), never to watches.
- When a whiteboard record has both an SDK token and a key pair, the SDK token is used.
- boardline writes a whiteboard record's \`sdk_token\` and \`secret_key\` sealed:
  \`v1.<key id>.<iv>.<ciphertext and tag>\`, AES-256-GCM under the \`SECRETS_KEYS\` key the id names,
  bound to the project and the field (docs/security.md, "Netless credentials at rest"). It reads a
  value without that shape as clear text, so another writer may still write them in clear;
  \`boardline whiteboard reseal\` seals those too.
- DeleteChannel removes the channel's passphrase records, its record, its mute state and meta, and
  both event streams, then takes it out of the index.
- Only boardline writes the idempotency records; one it cannot read counts as none and is replaced.
`;
}
