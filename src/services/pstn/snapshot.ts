/**
 * What the store answers when asked for a channel's PSTN mute state: every
 * participant's state with who set it when, and how far the channel's event
 * stream had got, read at one instant (src/services/ports.ts, `Store`).
 */

/** One telephone participant's mute state. */
export interface PstnParticipantState {
  readonly uid: string;
  readonly mute: boolean;
  /** When the state was last set (ms since the epoch); absent for states written before boardline kept it. */
  readonly updatedAt?: number;
  /** The `sub` of the caller who last set it; absent when unknown. */
  readonly updatedBy?: string;
}

/** A channel's mute state and the id of the last mute event it includes. */
export interface PstnSnapshot {
  /** Every participant with a mute state, in no particular order. */
  readonly participants: readonly PstnParticipantState[];
  /** The id of the newest entry of the channel's pstn-events stream ("0-0" when there is none). */
  readonly asOfEventId: string;
}

/** The participants ordered by uid (UTF-16 code units, as JavaScript compares strings), as GetPstnState answers them. */
export function participantsByUid(snapshot: PstnSnapshot): PstnParticipantState[] {
  return [...snapshot.participants].sort((a, b) => (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0));
}
