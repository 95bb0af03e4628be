/**
 * The gateway's watch of its channel (WatchPstnEvents with `include_line`):
 * a snapshot first, then the events from its `as_of_event_id`, resumed from
 * the last cursor after a cut, and from a new snapshot when boardline no
 * longer has that cursor (OUT_OF_RANGE). It applies what the host decided:
 * a mute or unmute reaches the caller's line, a hand the host lowered stays
 * down, and that caller keeps quiet for a few ticks.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { type PstnEvent, PstnEventKind, type PstnState } from "../../../gen/channel/v1/pstn_pb.js";
import { backOffMs, pause } from "./back-off.js";
import type { LineCalls } from "./line-calls.js";
import type { GatewaySettings } from "./options.js";
import type { Roster } from "./roster.js";

/** Ticks a caller the host just lowered the hand of does nothing. */
export const CALM_TICKS = 10;

export interface WatchTarget {
  readonly roster: Roster;
  /** The gateway's current tick. */
  tick(): number;
}

export async function watchLine(
  calls: LineCalls,
  target: WatchTarget,
  settings: GatewaySettings,
  signal: AbortSignal,
): Promise<void> {
  let after = "";
  let failures = 0;
  while (!signal.aborted) {
    try {
      if (after === "") {
        const state = await calls.snapshot();
        applySnapshot(target.roster, state);
        after = state.asOfEventId;
      }
      for await (const event of calls.watch(after)) {
        after = event.cursor;
        failures = 0;
        applyEvent(target, event);
      }
    } catch (e) {
      if (signal.aborted) return;
      const err = ConnectError.from(e);
      if (err.code === Code.OutOfRange) after = "";
      settings.logger.debug({ err, failures }, "phone gateway: the watch failed; watching again");
    }
    // A watch that ended or failed is opened again, after a back-off while boardline stays away.
    await pause(backOffMs(failures++, settings.backOffMs, settings.maxBackOffMs, Math.random), signal);
  }
}

function applySnapshot(roster: Roster, state: PstnState): void {
  for (const p of state.participants) {
    const caller = roster.get(p.uid);
    if (caller === undefined) continue;
    caller.muted = p.mute ?? false;
    caller.handRaised = p.handRaised;
  }
}

export function applyEvent(target: WatchTarget, event: PstnEvent): void {
  const caller = target.roster.get(event.uid);
  if (caller === undefined) return;
  switch (event.kind) {
    case PstnEventKind.UNSPECIFIED:
    case PstnEventKind.MUTE:
    case PstnEventKind.JOIN:
      // What the line plays to the caller: their microphone on or off.
      caller.muted = event.mute ?? caller.muted;
      return;
    case PstnEventKind.HAND:
      // The gateway's own lowering is already applied: a hand still up here was lowered by the host.
      if (caller.handRaised && !event.handRaised) caller.calmUntil = target.tick() + CALM_TICKS;
      caller.handRaised = event.handRaised;
      return;
    default:
      return;
  }
}
