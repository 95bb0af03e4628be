/**
 * Key names of the Redis schema, the one place they are built. Other services
 * read and write these records too, so the names are a contract:
 * docs/redis-schema.md lists every key, rendered from these builders by
 * `npm run generate`, and a test fails when it is stale. Passphrases (and the
 * caller keys of the wrong-passphrase counters, and the subjects and
 * Idempotency-Keys of idempotency records) are given here in clear and hashed,
 * so no key can carry one in clear. The `{…}` hash tags keep the keys one
 * script writes in one Cluster slot (docs/redis-schema.md, "Hash tags").
 */
import { createHash, createHmac } from "node:crypto";
import { developmentKeyRing, type KeyRing, type SecretKey } from "../../secrets/key-ring.js";

export const DEFAULT_KEY_PREFIX = "bl:";

/** Cap of each channel's event stream (XADD MAXLEN ~). */
export const MUTE_EVENTS_MAXLEN = 10_000;

/**
 * Default retention of a conversion task's record and changes stream: 7 days
 * after its last change (the stores' `retentionSeconds` setting).
 */
export const CONVERSION_TTL_SECONDS = 7 * 24 * 60 * 60;

/** Cap of each task's changes stream (XADD MAXLEN ~). */
export const CONVERSION_CHANGES_MAXLEN = 100;

/**
 * Default of how long the answer of a call sent with an Idempotency-Key is kept
 * (IDEMPOTENCY_TTL_HOURS; the stores' `idempotencyTtlSeconds` setting).
 */
export const IDEMPOTENCY_TTL_SECONDS = 24 * 60 * 60;

/** Cap of each project's admin-events stream (XADD MAXLEN ~). */
export const ADMIN_EVENTS_MAXLEN = 10_000;

/** Cap of each channel's whiteboard-events stream (XADD MAXLEN ~). */
export const WHITEBOARD_EVENTS_MAXLEN = 10_000;

/** Lowercase sha256 hex of the UTF-8 bytes: what a key carries in place of a caller's name or an Idempotency-Key. */
export function hashPassphrase(passphrase: string): string {
  return createHash("sha256").update(passphrase, "utf8").digest("hex");
}

/**
 * What a passphrase record's key carries: HMAC-SHA256 under a PASSPHRASE_KEYS
 * key of the JSON `[project, sha256 hex of the passphrase]`. The key, kept out
 * of Redis, is what stops a copy of Redis from testing guesses; the project
 * makes a passphrase unique within its project only, so no project can learn
 * whether another uses one. Over the sha256, not the passphrase, so a record
 * written before keys existed (its key carries that sha256) can be rewritten
 * without knowing its passphrase.
 */
export function passphraseDigest(key: SecretKey, project: string, sha: string): string {
  return createHmac("sha256", key.bytes)
    .update(JSON.stringify([project, sha]), "utf8")
    .digest("hex");
}

export interface KeySchema {
  readonly prefix: string;
  /** The keys of the passphrase index (PASSPHRASE_KEYS), current first. */
  readonly passphraseKeys: KeyRing;
  /** The digest a project's passphrase is written under now (see passphraseDigest). */
  passphraseDigestOf(project: string, passphrase: string): string;
  /**
   * Every digest a project's passphrase may still be found under, in the order
   * to try them: the current key's, older keys', and the bare sha256 of a
   * record written before keys existed (`key` field absent).
   */
  passphraseDigests(project: string, passphrase: string): string[];
  /** Key of a project's passphrase record under the current key; the passphrase in clear, the key carries its digest. */
  passphrase(project: string, passphrase: string): string;
  /** Key of a passphrase's record by its digest (what a channel record lists). */
  passphraseByHash(sha: string): string;
  /** SCAN pattern matching every passphrase record under this prefix. */
  passphrasePattern(): string;
  /** The sha256 hex a passphrase record's key carries, or undefined for a key of another shape. */
  passphraseHashOf(key: string): string | undefined;
  whiteboard(project: string): string;
  /** SCAN pattern of every project's whiteboard record; maintenance only (re-sealing its secrets). */
  whiteboardPattern(): string;
  /** The project a whiteboard record's key names, or undefined for a key of another shape. */
  whiteboardOf(key: string): string | undefined;
  /** The project's index of channels: a sorted set of channel ids, all scored 0 (lexicographic paging). */
  channelIndex(project: string): string;
  /** The project's audit trail of admin changes. */
  adminEvents(project: string): string;
  /** The channel's own record: its passphrase hashes, created at/by, expiry (same slot as its mute keys). */
  channelRecord(project: string, channel: string): string;
  /** SCAN pattern of the channel records (of one project, or of all); repairs only. */
  channelRecordPattern(project?: string): string;
  /** The project and channel a channel record's key names, or undefined for a key of another shape. */
  channelRecordOf(key: string): { project: string; channel: string } | undefined;
  /** SCAN pattern of every project's channel index; repairs only. */
  channelIndexPattern(): string;
  /** The project a channel index's key names, or undefined. */
  channelIndexOf(key: string): string | undefined;
  pstnMute(project: string, channel: string): string;
  pstnEvents(project: string, channel: string): string;
  /** uid → JSON `{"at":<ms>,"by":"<sub>","event_id":"<stream id>"}` of the uid's last mute change. */
  pstnMuteMeta(project: string, channel: string): string;
  /** The sharded pub/sub channel on which a mute announces its event id (same hash tag, so same slot). */
  pstnNotify(project: string, channel: string): string;
  /** uid → JSON of the participant's line: on it or not, the gateway's last sequence, caller id, joined, hand. */
  pstnLine(project: string, channel: string): string;
  /** uid → when the presence lease of a participant on the line runs out (ms, the Redis clock). */
  pstnLeases(project: string, channel: string): string;
  /** The line's policy: `mute_on_join`, `allow_self_unmute` (`1`/`0`). */
  pstnPolicy(project: string, channel: string): string;
  /** JSON `[project, channel]` → when the channel's next lease runs out (ms): the channels the sweep visits. */
  pstnLeasesDue(): string;
  /** JSON `[project, channel]` → `<notes>:<notes seen empty>`: how the sweep knows a channel stayed empty. */
  pstnLeaseNotes(): string;
  /** Every key of a channel's data (its PSTN keys and whiteboard events), not its record: what deleting it removes. */
  channelDataKeys(project: string, channel: string): string[];
  /** The channel's record and PSTN keys, from one hash tag made once: a mute writes them all. */
  channelKeys(project: string, channel: string): ChannelKeys;
  /** Terminal states of the channel's conversion tasks, for the notifier. */
  whiteboardEvents(project: string, channel: string): string;
  conversion(taskUuid: string): string;
  /** One entry per change of the task's status or percent. */
  conversionChanges(taskUuid: string): string;
  /** The owner id of the follower holding the task. */
  conversionLease(taskUuid: string): string;
  /** Every followed task, scored by when it is next due for a poll (ms). */
  conversionsDue(): string;
  /** The task uuid a conversion webhook id (src/services/conversion/webhooks.ts) stands for. */
  conversionWebhook(id: string): string;
  /** The project's queued tasks, scored in the order they came (the head is submitted next). */
  conversionQueue(project: string): string;
  /** Exists (with a time to live) while the project's next submission must wait: its pace. */
  conversionPace(project: string): string;
  /** The owner id of the submitter draining the project's queue. */
  conversionQueueLease(project: string): string;
  /** The task an identical request of the project reuses; the name carries a sha256 hex of the request. */
  conversionReuse(project: string, digest: string): string;
  /** Every project with queued tasks, scored by when its queue is next due (ms). */
  conversionQueues(): string;
  /**
   * The record of a call sent with an Idempotency-Key, per project and token
   * subject; the key name carries the sha256 hex of the JSON `[subject, key]`.
   */
  idempotency(project: string, subject: string, key: string): string;
  /** The guesses a caller took in the guessing window; its key in clear, the set's key carries its sha256 hex. */
  guesses(callerKey: string): string;
}

/** One channel's keys, as `channelRecord`, `pstnMute`, `pstnEvents`, `pstnMuteMeta` and `pstnNotify` name them. */
export interface ChannelKeys {
  readonly record: string;
  readonly mute: string;
  readonly events: string;
  readonly meta: string;
  readonly notify: string;
  readonly line: string;
  readonly leases: string;
  readonly policy: string;
}

const CHANNEL_RECORD = ":channel";
const PSTN_MUTE = ":pstn-mute";
const PSTN_EVENTS = ":pstn-events";
const PSTN_MUTE_META = ":pstn-mute-meta";
const PSTN_NOTIFY = ":pstn-notify";
const PSTN_LINE = ":pstn-line";
const PSTN_LEASES = ":pstn-leases";
const PSTN_POLICY = ":pstn-policy";

export function keySchema(
  prefix: string = DEFAULT_KEY_PREFIX,
  passphraseKeys: KeyRing = developmentKeyRing("PASSPHRASE_KEYS"),
): KeySchema {
  // Channel ids may hold `/`, project ids never do (checkProjectId, applied to every project a key is
  // named for: tokens, the admin functions, the CLI), so `<project>/<channel>` splits at its first `/`
  // and no two channels share a tag (channelRecordOf splits there).
  const channelTag = (project: string, channel: string) => `${prefix}chan:{${project}/${channel}}`;
  const current = (project: string, passphrase: string) =>
    passphraseDigest(passphraseKeys.current, project, hashPassphrase(passphrase));
  return {
    prefix,
    passphraseKeys,
    passphraseDigestOf: current,
    passphraseDigests: (project, passphrase) => {
      const sha = hashPassphrase(passphrase);
      return [...passphraseKeys.keys.map((key) => passphraseDigest(key, project, sha)), sha];
    },
    passphrase: (project, passphrase) => `${prefix}pass:{${current(project, passphrase)}}`,
    passphraseByHash: (sha) => `${prefix}pass:{${sha}}`,
    passphrasePattern: () => `${escapeGlob(prefix)}pass:*`,
    passphraseHashOf: (key) => {
      const head = `${prefix}pass:{`;
      if (!key.startsWith(head) || !key.endsWith("}")) return undefined;
      const sha = key.slice(head.length, -1);
      return /^[0-9a-f]{64}$/.test(sha) ? sha : undefined;
    },
    whiteboard: (project) => `${prefix}proj:{${project}}:whiteboard`,
    whiteboardPattern: () => `${escapeGlob(prefix)}proj:{*}:whiteboard`,
    whiteboardOf: (key) => between(key, `${prefix}proj:{`, "}:whiteboard"),
    channelIndex: (project) => `${prefix}proj:{${project}}:channels`,
    adminEvents: (project) => `${prefix}proj:{${project}}:admin-events`,
    channelRecord: (project, channel) => channelTag(project, channel) + CHANNEL_RECORD,
    channelRecordPattern: (project) =>
      `${escapeGlob(prefix)}chan:{${project === undefined ? "*" : `${escapeGlob(project)}/*`}}:channel`,
    channelRecordOf: (key) => {
      const inner = between(key, `${prefix}chan:{`, `}${CHANNEL_RECORD}`);
      const slash = inner?.indexOf("/") ?? -1;
      if (inner === undefined || slash < 0) return undefined;
      return { project: inner.slice(0, slash), channel: inner.slice(slash + 1) };
    },
    channelIndexPattern: () => `${escapeGlob(prefix)}proj:{*}:channels`,
    channelIndexOf: (key) => between(key, `${prefix}proj:{`, "}:channels"),
    pstnMute: (project, channel) => channelTag(project, channel) + PSTN_MUTE,
    pstnEvents: (project, channel) => channelTag(project, channel) + PSTN_EVENTS,
    pstnMuteMeta: (project, channel) => channelTag(project, channel) + PSTN_MUTE_META,
    pstnNotify: (project, channel) => channelTag(project, channel) + PSTN_NOTIFY,
    pstnLine: (project, channel) => channelTag(project, channel) + PSTN_LINE,
    pstnLeases: (project, channel) => channelTag(project, channel) + PSTN_LEASES,
    pstnPolicy: (project, channel) => channelTag(project, channel) + PSTN_POLICY,
    // One hash tag for both, so one script reads and writes them on a Cluster.
    pstnLeasesDue: () => `${prefix}{pstn-leases}:due`,
    pstnLeaseNotes: () => `${prefix}{pstn-leases}:notes`,
    channelDataKeys: (project, channel) => {
      const k = channelKeysOf(channelTag(project, channel));
      return [k.mute, k.events, k.meta, k.line, k.leases, k.policy, k.whiteboardEvents];
    },
    channelKeys: (project, channel) => channelKeysOf(channelTag(project, channel)),
    whiteboardEvents: (project, channel) => `${channelTag(project, channel)}:whiteboard-events`,
    conversion: (uuid) => `${prefix}conv:{${uuid}}`,
    conversionChanges: (uuid) => `${prefix}conv:{${uuid}}:changes`,
    conversionLease: (uuid) => `${prefix}conv:{${uuid}}:lease`,
    conversionsDue: () => `${prefix}conv-due`,
    conversionWebhook: (id) => `${prefix}conv-hook:{${id}}`,
    conversionQueue: (project) => `${prefix}proj:{${project}}:conv-queue`,
    conversionPace: (project) => `${prefix}proj:{${project}}:conv-pace`,
    conversionQueueLease: (project) => `${prefix}proj:{${project}}:conv-queue-lease`,
    conversionReuse: (project, digest) => `${prefix}proj:{${project}}:conv-reuse:${digest}`,
    conversionQueues: () => `${prefix}conv-queues`,
    idempotency: (project, subject, key) =>
      `${prefix}idem:{${project}}:${hashPassphrase(JSON.stringify([subject, key]))}`,
    guesses: (callerKey) => `${prefix}guesses:{${hashPassphrase(callerKey)}}`,
  };
}

/** A channel's keys under its hash tag. */
function channelKeysOf(tag: string): ChannelKeys & { readonly whiteboardEvents: string } {
  return {
    record: tag + CHANNEL_RECORD,
    mute: tag + PSTN_MUTE,
    events: tag + PSTN_EVENTS,
    meta: tag + PSTN_MUTE_META,
    notify: tag + PSTN_NOTIFY,
    line: tag + PSTN_LINE,
    leases: tag + PSTN_LEASES,
    policy: tag + PSTN_POLICY,
    whiteboardEvents: `${tag}:whiteboard-events`,
  };
}

/**
 * Why `project` cannot name keys, or undefined when it can: a `/` would make
 * two channels share their keys (`a/b` + `c` is `a` + `b/c`), a brace would
 * break out of the hash tag. A token's project is checked so too (src/auth/jwt.ts).
 */
export function checkProjectId(project: string): string | undefined {
  if (project.length === 0) return "project must not be empty";
  if (/[{}/]/.test(project)) return "project must not contain '{', '}' or '/'";
  if (hasControl(project)) return "project must not contain control characters";
  return undefined;
}

/**
 * Why `channel` cannot name keys, or undefined when it can (the API's
 * `channel_id` fields say the same in their protovalidate patterns).
 */
export function checkChannelId(channel: string): string | undefined {
  if (channel.length === 0) return "channel must not be empty";
  if (/[{}]/.test(channel)) return "channel must not contain '{' or '}'";
  if (hasControl(channel)) return "channel must not contain control characters";
  return undefined;
}

function hasControl(value: string): boolean {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: that is the point
  return /[\u0000-\u001f\u007f]/.test(value);
}

/** The text of `key` between `head` and `tail`, or undefined when it does not have that shape. */
function between(key: string, head: string, tail: string): string | undefined {
  if (!key.startsWith(head) || !key.endsWith(tail) || key.length < head.length + tail.length) return undefined;
  return key.slice(head.length, key.length - tail.length);
}

/** A prefix is used literally inside a SCAN MATCH glob. */
function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}
