/**
 * The moderation panel's roster: who is on the line, as the snapshot
 * (GetPstnState) said and each watched event since changed it, and its
 * table, one row per caller updated in place so a button never moves away
 * from under a click. Rows carry their state as data attributes
 * (`data-muted`, `data-setter`, `data-hand`) for styles and tests.
 */
import { timestampDate } from "@bufbuild/protobuf/wkt";
import {
  type PstnEvent,
  PstnEventKind,
  PstnLeaveReason,
  type PstnParticipant,
  type PstnPolicy,
  PstnSetter,
} from "./gen/channel/v1/pstn_pb.js";

export interface LineCaller {
  readonly uid: string;
  callerId: string;
  mute: boolean;
  setter: PstnSetter;
  handRaised: boolean;
  joinedAt: Date | undefined;
}

export interface RowActions {
  mute(uid: string, mute: boolean): void;
  lowerHand(uid: string): void;
}

const SETTERS: Record<PstnSetter, string> = {
  [PstnSetter.UNSPECIFIED]: "",
  [PstnSetter.HOST]: "host",
  [PstnSetter.SELF]: "self",
  [PstnSetter.POLICY]: "policy",
};

const LEFT: Record<PstnLeaveReason, string> = {
  [PstnLeaveReason.UNSPECIFIED]: "left",
  [PstnLeaveReason.REPORTED]: "hung up",
  [PstnLeaveReason.SYNC]: "left (roster sync)",
  [PstnLeaveReason.LEASE]: "left (the gateway stopped reporting them)",
};

export class LineRoster {
  readonly callers = new Map<string, LineCaller>();
  policy = { muteOnJoin: false, allowSelfUnmute: true };

  /** A snapshot: only those on the line now (the state also lists everyone ever muted). */
  load(participants: readonly PstnParticipant[], policy: PstnPolicy | undefined): void {
    this.callers.clear();
    for (const p of participants) {
      if (!p.onLine) continue;
      this.callers.set(p.uid, {
        uid: p.uid,
        callerId: p.callerId,
        mute: p.mute ?? false,
        setter: p.setter,
        handRaised: p.handRaised,
        joinedAt: p.joinedAt === undefined ? undefined : timestampDate(p.joinedAt),
      });
    }
    if (policy !== undefined) this.policy = { muteOnJoin: policy.muteOnJoin, allowSelfUnmute: policy.allowSelfUnmute };
  }

  /** Applies one watched event; answers a line for the log when it is worth one. */
  apply(e: PstnEvent): string | undefined {
    const caller = this.callers.get(e.uid);
    switch (e.kind) {
      case PstnEventKind.JOIN:
        this.callers.set(e.uid, {
          uid: e.uid,
          callerId: e.callerId,
          mute: e.mute ?? false,
          setter: e.setter,
          handRaised: false,
          joinedAt: e.at === undefined ? new Date() : timestampDate(e.at),
        });
        return `${e.uid} (${e.callerId || "withheld"}) joined${e.mute ? ", muted" : ""}`;
      case PstnEventKind.LEAVE:
        this.callers.delete(e.uid);
        return `${e.uid} ${LEFT[e.leaveReason]}`;
      case PstnEventKind.HAND:
        if (caller !== undefined) caller.handRaised = e.handRaised;
        return e.handRaised ? `${e.uid} raised their hand` : undefined;
      case PstnEventKind.POLICY:
        if (e.policy !== undefined) {
          this.policy = { muteOnJoin: e.policy.muteOnJoin, allowSelfUnmute: e.policy.allowSelfUnmute };
        }
        return `policy: mute newcomers ${this.policy.muteOnJoin}, keypad unmute ${this.policy.allowSelfUnmute}`;
      case PstnEventKind.MUTE_ALL:
        return `${e.mute ? "muted" : "unmuted"} everyone (${e.changed} changed) by ${e.by}`;
      default:
        // MUTE, or a mute event of a watch without kinds: `mute` is the state after it.
        if (caller !== undefined) {
          caller.mute = e.mute ?? caller.mute;
          caller.setter = e.setter;
        }
        return undefined;
    }
  }
}

/** Brings the table's rows in line with the roster, ordered by uid. */
export function renderRoster(body: HTMLElement, roster: LineRoster, actions: RowActions): void {
  const rows = new Map([...body.querySelectorAll<HTMLTableRowElement>("tr[data-uid]")].map((r) => [r.dataset.uid, r]));
  const callers = [...roster.callers.values()].sort((a, b) => (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0));
  for (const caller of callers) {
    const row = rows.get(caller.uid) ?? newRow(caller.uid, roster, actions);
    rows.delete(caller.uid);
    fillRow(row, caller);
    body.append(row);
  }
  for (const gone of rows.values()) gone.remove();
}

function newRow(uid: string, roster: LineRoster, actions: RowActions): HTMLTableRowElement {
  const row = document.createElement("tr");
  row.dataset.uid = uid;
  for (const name of ["uid", "caller-id", "joined", "state", "hand", "actions"]) {
    const cell = document.createElement("td");
    cell.className = name;
    row.append(cell);
  }
  const toggle = button("toggle-mute", () => actions.mute(uid, !(roster.callers.get(uid)?.mute ?? false)));
  const lower = button("lower-hand", () => actions.lowerHand(uid));
  lower.textContent = "Lower hand";
  row.querySelector(".actions")?.append(toggle, " ", lower);
  return row;
}

function button(className: string, onClick: () => void): HTMLButtonElement {
  const b = document.createElement("button");
  b.type = "button";
  b.className = className;
  b.addEventListener("click", onClick);
  return b;
}

function fillRow(row: HTMLTableRowElement, c: LineCaller): void {
  const setter = SETTERS[c.setter];
  row.dataset.muted = String(c.mute);
  row.dataset.setter = setter;
  row.dataset.hand = c.handRaised ? "raised" : "down";
  const cell = (name: string) => row.querySelector(`.${name}`) as HTMLElement;
  cell("uid").textContent = c.uid;
  cell("caller-id").textContent = c.callerId || "withheld";
  cell("joined").textContent = c.joinedAt?.toLocaleTimeString() ?? "";
  cell("state").textContent = `${c.mute ? "muted" : "speaking"}${setter ? ` (${setter})` : ""}`;
  cell("hand").textContent = c.handRaised ? "raised" : "";
  (row.querySelector(".toggle-mute") as HTMLButtonElement).textContent = c.mute ? "Unmute" : "Mute";
  (row.querySelector(".lower-hand") as HTMLButtonElement).disabled = !c.handRaised;
}
