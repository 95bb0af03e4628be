/**
 * What the phone line needs from the store (re-exported by ports.ts, where
 * `Store.line` offers it): the telephone gateway's reports, the host's
 * moderation of everyone on the line, the channel's policy, and the sweep of
 * presence leases that ran out. Each call is one atomic step on the channel's
 * keys, with its events (docs/pstn-line.md).
 */
import type { LinePolicy, PstnParticipantState } from "./snapshot.js";

export { DEFAULT_LINE_POLICY, type LinePolicy, type MuteSetter } from "./snapshot.js";

/** What the gateway saw happen to a participant. */
export type LineChange =
  | { readonly kind: "join"; readonly callerId: string; readonly joinedAt: number }
  | { readonly kind: "leave" }
  | { readonly kind: "presence" }
  | { readonly kind: "keypad_mute"; readonly mute: boolean }
  | { readonly kind: "hand"; readonly raised: boolean };

/** What a report did (`LineOutcome` of the contract). */
export type LineOutcome = "applied" | "duplicate" | "stale" | "refused" | "not_on_line" | "line_full" | "unchanged";

/** A change made on a channel's line, by whom and when. */
export interface LineCall {
  readonly project: string;
  readonly channel: string;
  /** The caller's `sub` ("" for the sweep). */
  readonly by: string;
  /** Milliseconds since the epoch. */
  readonly at: number;
  /** The channel's expiry, when known (its passphrase record's); the line's keys expire with the channel. */
  readonly expireAt?: number | undefined;
}

/** The gateway's report of one participant. */
export interface LineReport extends LineCall {
  readonly uid: string;
  /** The gateway's sequence, as decimal digits (uint64). */
  readonly sequence: string;
  readonly change: LineChange;
}

/** A participant of a roster sync. */
export interface LineMember {
  readonly uid: string;
  readonly callerId: string;
  readonly joinedAt: number;
}

export interface LineSync extends LineCall {
  readonly sequence: string;
  readonly members: readonly LineMember[];
}

export interface MuteAllCall extends LineCall {
  readonly mute: boolean;
  readonly except: readonly string[];
  /** Sets the policy's `muteOnJoin` in the same step; undefined: unchanged. */
  readonly muteOnJoin?: boolean | undefined;
}

export interface PolicyCall extends LineCall {
  readonly muteOnJoin?: boolean | undefined;
  readonly allowSelfUnmute?: boolean | undefined;
}

export interface LowerHandsCall extends LineCall {
  /** Empty: everyone on the line. */
  readonly uids: readonly string[];
}

export interface ReportAnswer {
  readonly outcome: LineOutcome;
  /** The participant's state after the report. */
  readonly participant: PstnParticipantState;
}

export interface MuteAllAnswer {
  readonly changed: number;
  readonly unchanged: number;
  readonly policy: LinePolicy;
  /** The id of the call's last event ("0-0": none). */
  readonly eventId: string;
}

/** The line's limits, from the configuration. */
export interface LineLimits {
  /** PSTN_PRESENCE_TTL_SECONDS, in ms: a participant not reported for this long is marked left. */
  readonly leaseMs: number;
  /** PSTN_MAX_LINE: participants on one channel's line. */
  readonly maxLine: number;
}

/** PSTN_PRESENCE_TTL_SECONDS and PSTN_MAX_LINE's defaults. */
export const DEFAULT_LINE_LIMITS: LineLimits = { leaseMs: 60_000, maxLine: 5000 };

/** A channel's line, in the store. */
export interface PhoneLine {
  report(report: LineReport): Promise<ReportAnswer>;
  /** Participants who joined and who left. */
  sync(sync: LineSync): Promise<{ joined: number; left: number }>;
  muteAll(call: MuteAllCall): Promise<MuteAllAnswer>;
  setPolicy(call: PolicyCall): Promise<LinePolicy>;
  /** How many hands were lowered. */
  lowerHands(call: LowerHandsCall): Promise<number>;
  /**
   * Marks left every participant whose lease ran out, on up to `channels`
   * channels that are due; answers how many channels it took and how many
   * participants left. Safe to run on every instance at once: each lease
   * ends once.
   */
  expireLeases(channels: number): Promise<{ channels: number; left: number }>;
}
