/**
 * What managing channels through the API needs from the store (re-exported by
 * ports.ts, where `Store.channels` offers it): channels created with their
 * passphrases, found and listed by index — never by SCAN — rotated, removed,
 * and an audit trail of every change. docs/architecture.md, "Channels through
 * the API", says how the indexes and the order of writes keep a crash between
 * two steps from leaving a passphrase that opens a channel nobody can list.
 */

import type { WhiteboardSettings } from "../conversion/ports.js";

/** Who a passphrase lets in: the host controls the channel, an attendee joins it. */
export type PassphraseRole = "host" | "attendee";

/** A channel as the admin API shows it: never a passphrase. */
export interface ChannelInfo {
  readonly project: string;
  readonly channel: string;
  /** When it was created (ms since the epoch); undefined for a channel indexed by `reindex`. */
  readonly createdAt: number | undefined;
  /** The `sub` of the token that created it; undefined as for `createdAt`. */
  readonly createdBy: string | undefined;
  /** When it stops working and its keys are removed (ms since the epoch); undefined: never. */
  readonly expireAt: number | undefined;
  /** The roles that have a passphrase, host first. */
  readonly roles: readonly PassphraseRole[];
}

export interface NewChannel {
  readonly project: string;
  readonly channel: string;
  /** In clear (already checked and generated where left out); the store keeps only their hashes. */
  readonly passphrases: ReadonlyArray<{ readonly role: PassphraseRole; readonly passphrase: string }>;
  readonly createdBy: string;
  readonly createdAt: number;
  readonly expireAt: number | undefined;
}

export type CreateOutcome =
  | { readonly kind: "created" }
  /** The channel id is already in the project's index. Nothing was written. */
  | { readonly kind: "exists" }
  /** A passphrase already opens another channel (of any project). Nothing is left behind. */
  | { readonly kind: "passphrase_taken"; readonly role: PassphraseRole };

export type RotateOutcome =
  | { readonly kind: "rotated" }
  /** No such channel in the project (or the role has no passphrase to replace). */
  | { readonly kind: "unknown" }
  | { readonly kind: "passphrase_taken" };

export interface ChannelPage {
  readonly channels: readonly ChannelInfo[];
  /** The channel id to continue after; undefined on the last page. */
  readonly next: string | undefined;
}

/** One entry of a project's admin stream: who changed what, when. Never a passphrase or a secret. */
export interface AdminEvent {
  readonly at: number;
  readonly by: string;
  /** e.g. `channel.create`, `channel.rotate`, `channel.delete`, `whiteboard.set`, `whiteboard.clear`. */
  readonly action: string;
  readonly channel?: string;
  /** e.g. the role rotated, or the kind of whiteboard credential set. */
  readonly detail?: string;
}

/** The conversion QPS of a project that has set none: the Netless backend's default plan. */
export const DEFAULT_CONVERSION_QPS = 1;
/** The most conversion QPS a project may set (the `lte` of SetWhiteboardSettings' `conversion_qps`). */
export const MAX_CONVERSION_QPS = 1000;

/** A project's whiteboard settings as the admin API shows them: never a secret, nor a prefix of one. */
export interface WhiteboardInfo {
  readonly region: string;
  readonly credential: "sdk_token" | "access_key";
  /** The effective value: `DEFAULT_CONVERSION_QPS` when none is set (or the stored one is unreadable). */
  readonly conversionQps: number;
  readonly updatedAt: number | undefined;
  readonly updatedBy: string | undefined;
}

export interface ChannelDirectory {
  /**
   * Creates a channel: its index entries first (the project's channel index and
   * the channel's own record of its passphrase hashes, created time and author,
   * expiry), then the passphrase records. A crash in between leaves a listed
   * channel that a passphrase may not open yet — never a passphrase that opens
   * a channel the index does not show (`doctor` finishes or undoes it). With
   * `expireAt`, every key of the channel expires then.
   */
  create(channel: NewChannel): Promise<CreateOutcome>;
  get(project: string, channel: string): Promise<ChannelInfo | undefined>;
  /**
   * The project's channels in channel-id order (byte order), after `after`
   * (exclusive), at most `limit`. A channel that exists throughout a listing is
   * listed exactly once, whatever is created or deleted meanwhile.
   */
  list(project: string, limit: number, after: string | undefined): Promise<ChannelPage>;
  /**
   * Gives `role` a new passphrase: the new hash is indexed and its record
   * written first, then the old record and its hash go, so the old passphrase
   * stops opening the channel (within the read caches' bound).
   */
  rotate(project: string, channel: string, role: PassphraseRole, passphrase: string): Promise<RotateOutcome>;
  /**
   * Removes everything of the channel: its passphrase records first, then its
   * mute state, meta and both event streams, then its index entries. False
   * when the project has no such channel.
   */
  remove(project: string, channel: string): Promise<boolean>;
  /** Appends one entry to the project's admin stream. */
  audit(project: string, event: AdminEvent): Promise<void>;
  /** The project's whiteboard settings without their secrets, or undefined when none are set. */
  whiteboardInfo(project: string): Promise<WhiteboardInfo | undefined>;
  /**
   * Sets (replaces) the project's whiteboard settings, recording who set them
   * when (what `whiteboardInfo` answers as `updatedBy`/`updatedAt`). The
   * settings are checked by the domain's request rules; the store checks them
   * again as for any admin write.
   */
  setWhiteboard(project: string, settings: WhiteboardSettings, by: string, at: number): Promise<void>;
  /** Removes the project's whiteboard settings; nothing to remove is fine. */
  clearWhiteboard(project: string): Promise<void>;
  /**
   * The id of the newest entry of the channel's whiteboard-events stream
   * ("0-0": none) — GetChannel's other stream; the mute stream's comes with
   * `getPstnSnapshot`.
   */
  newestWhiteboardEventId(project: string, channel: string): Promise<string>;
}
