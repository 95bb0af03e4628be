/**
 * The interfaces the business layer needs from the outside world. Adapters in
 * src/store, src/netless and src/auth implement them; src/services uses them.
 * Adapters report trouble by throwing `Failure` (src/services/failure.ts):
 * `unavailable` for a backend that cannot be reached, `deadline_exceeded` for a
 * time-out, `internal` for anything that should never happen.
 */
import type { ChannelDirectory, PassphraseRole } from "./channel/ports.js";
import type { ConversionStore, WhiteboardEvent, WhiteboardSettings } from "./conversion/ports.js";
import type { ConversionQueueStore } from "./conversion/queue-ports.js";
import type { IdempotencyStore } from "./idempotency/ports.js";

export * from "./channel/ports.js";
export * from "./conversion/ports.js";
export * from "./conversion/queue-ports.js";
export * from "./idempotency/ports.js";

import type { MuteEvent, PstnEventLog } from "./pstn/event-ports.js";

export type {
  ChannelRef,
  MuteEvent,
  PstnEventLog,
  PstnEventPage,
  PstnNotificationListener,
  PstnNotifications,
} from "./pstn/event-ports.js";

import type { PstnSnapshot } from "./pstn/snapshot.js";
import type { PhoneLine } from "./pstn/line-ports.js";
import type { StoreObserver } from "./store-observer.js";

export type * from "./pstn/line-ports.js";
export { DEFAULT_LINE_LIMITS, DEFAULT_LINE_POLICY } from "./pstn/line-ports.js";

/** Who is calling, taken from a verified JWT. */
export interface Caller {
  /** The project the token belongs to (claim `JWT_PROJECT_CLAIM`, default `project_id`). */
  readonly project: string;
  /** The token's `sub`. */
  readonly subject: string;
  /**
   * The token's scopes (claim `JWT_SCOPE_CLAIM`, default `scope`). Scopes only
   * add rights: a token without any keeps the rights every token has.
   */
  readonly scopes: ReadonlySet<string>;
}

/** The scope of the telephone gateway: read and watch every channel of its project by channel id. */
export const PSTN_GATEWAY_SCOPE = "pstn.gateway";

/**
 * The scope of the product's own backend: manage the project's channels, their
 * passphrases and its whiteboard settings (ChannelAdminService). Nothing else:
 * it does not add the gateway's reads.
 */
export const CHANNELS_ADMIN_SCOPE = "channels.admin";

/** Every scope there is: what the operator CLI's in-process caller holds. */
export const ALL_SCOPES: readonly string[] = [PSTN_GATEWAY_SCOPE, CHANNELS_ADMIN_SCOPE];

export interface Authenticator {
  /**
   * Verifies the value of an `Authorization` header (`Bearer <jwt>`).
   * Throws `Failure("unauthenticated")` for anything but a valid token.
   */
  authenticate(authorization: string | undefined): Promise<Caller>;
}

export interface PassphraseRecord {
  readonly project: string;
  readonly channel: string;
  readonly role: PassphraseRole;
  /**
   * When the channel expires (ms since the epoch; absent: never). The record
   * carries it so a reader that holds the record (a read cache) stops using it
   * then, and a mute gives the channel's mute keys that expiry.
   */
  readonly expireAt?: number;
}

export interface MuteChange {
  readonly project: string;
  readonly channel: string;
  readonly uid: string;
  readonly mute: boolean;
  /** The caller's `sub`. */
  readonly by: string;
  /** Milliseconds since the epoch. */
  readonly at: number;
  /** The channel's expiry (its passphrase record's `expireAt`): the mute keys expire then too. */
  readonly expireAt?: number | undefined;
}

/** What the services read and write. Redis in production, in memory for the demo. */
export interface Store {
  /** The record of a project's passphrase, or undefined when the project has no channel it opens. */
  lookupPassphrase(project: string, passphrase: string): Promise<PassphraseRecord | undefined>;
  /**
   * The project's whiteboard settings, or undefined when the whiteboard is not
   * set up (no record, `enabled` not `1`, or no usable credentials/region).
   */
  getWhiteboard(project: string): Promise<WhiteboardSettings | undefined>;
  /**
   * Writes the mute hash field, appends the stream entry and records who set
   * it when, atomically, and notifies the channel's watchers.
   */
  setMute(change: MuteChange): Promise<void>;
  /**
   * The channel's mute state and the id of the newest entry of its event
   * stream, read atomically (no mute lands between the two). A channel nobody
   * muted in is empty, "0-0".
   */
  getPstnSnapshot(project: string, channel: string): Promise<PstnSnapshot>;
  /** The channels' mute events, for watching them (one subscriber per store). */
  readonly pstnEvents: PstnEventLog;
  /** The channels' phone lines: the gateway's reports, the host's moderation, the presence leases. */
  readonly line: PhoneLine;
  /** Conversion tasks: their records, and what the followers of every instance share. */
  readonly conversions: ConversionStore;
  /** Each project's queue of conversion requests waiting for their turn at the backend. */
  readonly conversionQueue: ConversionQueueStore;
  /** The records of calls sent with an Idempotency-Key (safe retries of ConvertFile). */
  readonly idempotency: IdempotencyStore;
  /** Channels managed through the API: created, listed by index (never by SCAN), rotated, removed, audited. */
  readonly channels: ChannelDirectory;
  /** Reports the store's plumbing (commands, errors, reconnections) to `observer`; a store without any has none. */
  observe?(observer: StoreObserver): void;
  /**
   * Takes one guess of a caller key, atomically: granted while the key holds
   * fewer than `limit` guesses taken within the last `windowSeconds` (a sliding
   * window), refused otherwise with the seconds until its oldest guess leaves
   * the window, rounded up. A granted guess is named by `slot` (unique per call,
   * without `!`) and counts for the whole window unless `returnGuess` gives it
   * back; `keepGuess` marks it a miss.
   */
  takeGuess(callerKey: string, slot: string, limit: number, windowSeconds: number): Promise<GuessTaken>;
  /** Gives a taken guess back (the passphrase was right); an unknown or expired slot is ignored. */
  returnGuess(callerKey: string, slot: string): Promise<void>;
  /** The taken guess was a miss: it counts until it leaves the window; an unknown or expired slot is ignored. */
  keepGuess(callerKey: string, slot: string): Promise<void>;
  /** Resolves when the store can serve requests; throws `Failure("unavailable")` otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A guess granted, or refused with the whole seconds (at least 1) until one
 * leaves the window; `held`: some guesses of the full window are not kept
 * misses but calls still being judged, which may give theirs back any moment.
 */
export type GuessTaken =
  | { readonly granted: true }
  | { readonly granted: false; readonly retryAfterSeconds: number; readonly held: boolean };

/** One problem `channelDoctor` found, and what it did about it. */
export interface ChannelDoctorFinding {
  readonly problem:
    | "index_without_record"
    | "record_without_index"
    | "interrupted_create"
    | "interrupted_rotate"
    | "interrupted_delete"
    | "stale_passphrase"
    | "unindexed_passphrase";
  readonly project: string;
  readonly channel: string;
  /** What was done, e.g. `removed from the index`, `undone`, `indexed`. */
  readonly repair: string;
}

export interface ChannelDoctorReport {
  readonly channelsChecked: number;
  readonly passphrasesChecked: number;
  readonly findings: readonly ChannelDoctorFinding[];
}

export interface ReindexOptions {
  /** Keys per SCAN step (COUNT); default 500. */
  readonly batch?: number;
  /** Pause between steps, so a serving Redis is not hogged; default 10 ms. */
  readonly pauseMs?: number;
  /** The cursor a stopped pass reported; default "0" (from the start). */
  readonly from?: string;
  /** Stop after this many steps (and report the cursor to resume from); default: run to the end. */
  readonly maxSteps?: number;
}

export interface ReindexReport {
  /** Passphrase records read. */
  readonly scanned: number;
  /** Passphrase records that were not indexed and now are. */
  readonly indexed: number;
  /** Passphrase records written before PASSPHRASE_KEYS (under the bare sha256) moved to the current key. */
  readonly rekeyed: number;
  /**
   * Passphrase records under a key that is not the current one: they move on
   * their passphrase's next use (only then is the passphrase at hand); the old
   * key stays in PASSPHRASE_KEYS until none are left, or their channels rotate.
   */
  readonly olderKey: number;
  /** Where to resume (`from`); "0" once the pass is complete. */
  readonly cursor: string;
}

export interface ResealReport {
  /** Whiteboard records read. */
  readonly scanned: number;
  /** Records whose secrets were in clear or under an older key, and now are under the current one. */
  readonly resealed: number;
  /** Records left alone because they changed while the pass was at them (their writer sealed them). */
  readonly changed: number;
  /**
   * Projects whose secrets do not open (their key is missing from
   * SECRETS_KEYS, or they were altered): left as they are.
   */
  readonly unreadable: readonly string[];
  /** Where to resume (`from`); "0" once the pass is complete. */
  readonly cursor: string;
}

/** Who changed a record when (the admin API's caller); absent for the CLI's writes. */
export interface ChangedBy {
  readonly by: string;
  readonly at: number;
}

/**
 * Operator and test functions over the same documented records (the CLI's maintenance commands use these).
 * Each refuses (`invalid`) a project or channel id the key schema cannot hold (checkProjectId, checkChannelId).
 */
export interface AdminStore extends Store {
  createChannel(input: {
    project: string;
    channel: string;
    hostPassphrase: string;
    attendeePassphrase?: string;
  }): Promise<void>;
  /**
   * Deletes the channel's passphrase records, its mute and meta hashes, its
   * mute event stream and its whiteboard-events stream, and its index entries.
   * The passphrases of an indexed channel are found by its record; those of a
   * channel no index knows yet (written by another writer) by scanning.
   * Returns how many keys went (index entries not counted).
   */
  deleteChannel(project: string, channel: string): Promise<number>;
  /** With `changed`, the record carries `updated_at`/`updated_by` (whiteboardInfo shows them); without, neither. */
  setWhiteboard(project: string, settings: WhiteboardSettings, changed?: ChangedBy): Promise<void>;
  clearWhiteboard(project: string): Promise<void>;
  getMuteState(project: string, channel: string): Promise<Record<string, boolean>>;
  getMuteEvents(project: string, channel: string, count?: number): Promise<MuteEvent[]>;
  /** The newest `count` (default 20) whiteboard events of the channel, newest first. */
  getWhiteboardEvents(project: string, channel: string, count?: number): Promise<WhiteboardEvent[]>;
  /**
   * Finds and repairs what interrupted channel writes left (docs/architecture.md,
   * "Channels through the API"), in one project or all. Writes younger than
   * `graceMs` (default 60 s) are taken to be under way and left alone. SCANs.
   */
  channelDoctor(project?: string, options?: { graceMs?: number }): Promise<ChannelDoctorReport>;
  /**
   * One throttled, resumable SCAN pass over the passphrase records that
   * indexes the channels other writers (or the CLI before the indexes) wrote.
   * Safe while serving.
   */
  reindexChannels(options?: ReindexOptions): Promise<ReindexReport>;
  /**
   * One throttled, resumable SCAN pass over the whiteboard records that seals
   * again, under the current SECRETS_KEYS key, every secret field in clear or
   * under an older key; a record that changes meanwhile is left to its
   * writer. Idempotent, safe while serving.
   */
  resealWhiteboards(options?: ReindexOptions): Promise<ResealReport>;
}
