/**
 * What each store does for the channel directory (src/store/channels/steps.ts)
 * and its repairs (src/store/channels/repair.ts): one step each, on keys of one
 * slot. The order of the steps, which keeps a crash between two of them from
 * leaving a passphrase that opens a channel nobody can list, lives in those
 * files, once for both stores.
 */
import type { PassphraseRecord } from "../../services/ports.js";
import type { Fields } from "../schema/channel-records.js";

export type ClaimResult =
  /** The record is ours: `created` when it did not exist before. */
  | { readonly claimed: true; readonly created: boolean }
  | { readonly claimed: false; readonly owner: { readonly project: string; readonly channel: string } };

export interface ChannelPrimitives {
  /**
   * One step on the channel hash: "create" writes `fields` (and PEXPIREAT
   * `expireAt`) only when the hash does not exist; "update" HSETs them only
   * when it does. True when written.
   */
  writeRecord(
    project: string,
    channel: string,
    mode: "create" | "update",
    fields: Fields,
    expireAt: number | undefined,
  ): Promise<boolean>;
  dropRecordFields(project: string, channel: string, fields: readonly string[]): Promise<void>;
  /** The channel hash's fields; {} when missing, expired or not a hash. */
  readRecord(project: string, channel: string): Promise<Fields>;
  /** ZADD 0 into the project's index. */
  index(project: string, channel: string): Promise<void>;
  /** ZREM from the project's index. */
  unindex(project: string, channel: string): Promise<void>;
  /** ZRANGEBYLEX (after (or -) + LIMIT 0 limit. */
  indexPage(project: string, after: string | undefined, limit: number): Promise<string[]>;
  /**
   * In one step: writes `pass:{sha}` unless it opens another channel, with
   * PEXPIREAT `expireAt` when given, and the id of the key `sha` was made
   * under (field `key`) when given.
   */
  claimPassphrase(
    sha: string,
    record: PassphraseRecord,
    expireAt: number | undefined,
    keyId?: string,
  ): Promise<ClaimResult>;
  /** In one step: deletes `pass:{sha}` only when it opens this channel. True when deleted. */
  releasePassphrase(sha: string, project: string, channel: string): Promise<boolean>;
  /** The passphrase record's fields; {} when missing. */
  readPassphrase(sha: string): Promise<Fields>;
  /**
   * In one step (one slot): UNLINK the channel's mute hash, meta hash, event
   * stream, whiteboard-events stream and (`withRecord`) its hash. Answers how
   * many of the first four existed.
   */
  removeChannelData(project: string, channel: string, withRecord: boolean): Promise<number>;
  /** XADD MAXLEN ~ to the project's admin-events stream. */
  appendAdminEvent(project: string, fields: Fields): Promise<void>;
  readWhiteboardRecord(project: string): Promise<Fields>;
  /**
   * One SCAN step over keys matching `pattern` (every master of a Cluster, one
   * after the other; the cursor says where). "0" starts and ends. Repairs
   * only: never on an API path.
   */
  scan(pattern: string, cursor: string, count: number): Promise<{ cursor: string; keys: string[] }>;
}
