/**
 * One step of the gateway against boardline: dialing in the callers the line
 * is short of, syncing the roster when it is due, or playing a caller's
 * move; each answer updates the gateway's view of its callers.
 */
import { LineOutcome, type ReportLineResponse } from "../../../gen/channel/v1/pstn_pb.js";
import type { LineCalls } from "./line-calls.js";
import { type Move, REDIAL_TICKS } from "./next-move.js";
import type { LineCaller, Roster } from "./roster.js";

/** Dials in newcomers until the line holds `count` callers (once `redialAt` has come). */
export async function fillLine(calls: LineCalls, roster: Roster, count: number, tick: number): Promise<void> {
  if (tick < roster.redialAt) return;
  while (roster.size < count) {
    const caller = roster.newcomer(Date.now());
    const answer = await calls.join(caller);
    // A full line takes nobody more for now.
    if (answer.outcome === LineOutcome.LINE_FULL) {
      roster.redialAt = tick + REDIAL_TICKS;
      return;
    }
    applyAnswer(caller, answer);
    roster.add(caller);
  }
}

/** SyncLine with every caller: boardline joins those it lost and refreshes everyone's presence. */
export async function syncLine(calls: LineCalls, roster: Roster): Promise<void> {
  const state = await calls.sync(roster.all());
  for (const p of state?.participants ?? []) {
    const caller = roster.get(p.uid);
    if (caller === undefined || !p.onLine) continue;
    caller.muted = p.mute ?? caller.muted;
    caller.handRaised = p.handRaised;
  }
}

export async function playMove(calls: LineCalls, roster: Roster, move: Move, tick: number): Promise<void> {
  if (move.kind === "idle") return;
  const caller = roster.get(move.uid);
  if (caller === undefined) return;
  if (move.kind === "hang-up") {
    roster.remove(caller.uid);
    roster.redialAt = tick + REDIAL_TICKS;
    await calls.report(caller.uid, { case: "leave", value: {} });
    return;
  }
  const answer =
    move.kind === "keypad"
      ? await calls.report(caller.uid, { case: "keypadMute", value: { mute: move.mute } })
      : await calls.report(caller.uid, { case: "hand", value: { raised: move.raised } });
  // boardline lost the caller (a restart, or a lease that ran out): the gateway says they are there.
  if (answer.outcome === LineOutcome.NOT_ON_LINE) {
    applyAnswer(caller, await calls.join(caller));
    return;
  }
  applyAnswer(caller, answer);
}

/** A refused keypad unmute keeps the caller muted: the answer's state is the one to play. */
function applyAnswer(caller: LineCaller, answer: ReportLineResponse): void {
  if (answer.participant === undefined) return;
  caller.muted = answer.participant.mute ?? caller.muted;
  caller.handRaised = answer.participant.handRaised;
}
