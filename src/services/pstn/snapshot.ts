/**
 * What the store answers when asked for a channel's line: every participant
 * on it or with a mute state, who set that when, the policy, and how far the channel's event
 * stream had got, read at one instant (src/services/ports.ts, `Store`).
 */

/** What set a participant's mute state. */
export type MuteSetter = "host" | "self" | "policy";

/** How a channel's line treats its participants. */
export interface LinePolicy {
  /** Newcomers start muted. */
  readonly muteOnJoin: boolean;
  /** A participant muted by the host or the policy may unmute from the keypad. */
  readonly allowSelfUnmute: boolean;
}

/** The policy of a channel nobody set one for. */
export const DEFAULT_LINE_POLICY: LinePolicy = { muteOnJoin: false, allowSelfUnmute: true };

/** One telephone participant: on the line now, or with a mute state. */
export interface PstnParticipantState {
  readonly uid: string;
  readonly mute: boolean;
  /** When the state was last set (ms since the epoch); absent for states written before boardline kept it. */
  readonly updatedAt?: number;
  /** The `sub` of the caller who last set it; absent when unknown. */
  readonly updatedBy?: string;
  /** What set the mute state; absent when unknown (set before boardline kept it). */
  readonly setter?: MuteSetter;
  /** On the line now. */
  readonly onLine?: boolean;
  readonly callerId?: string;
  /** When they joined (ms), while on the line. */
  readonly joinedAt?: number;
  readonly hand?: boolean;
  /** When the hand was last raised or lowered (ms). */
  readonly handAt?: number;
}

/** A channel's mute state and the id of the last mute event it includes. */
export interface PstnSnapshot {
  /** Every participant with a mute state, in no particular order. */
  readonly participants: readonly PstnParticipantState[];
  /** The id of the newest entry of the channel's pstn-events stream ("0-0" when there is none). */
  readonly asOfEventId: string;
  readonly policy: LinePolicy;
}

/** The participants ordered by uid (UTF-16 code units, as JavaScript compares strings), as GetPstnState answers them. */
export function participantsByUid(snapshot: PstnSnapshot): PstnParticipantState[] {
  return [...snapshot.participants].sort((a, b) => (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0));
}
