/**
 * ReportLine and SyncLine: the telephone gateway telling what happened on a
 * channel's line (token scope `pstn.gateway`). Transport-free: the caller is
 * authenticated and the request validated. Channel ids are taken within the
 * caller's project, as for watching. What a report did is data (its
 * outcome), never an error: a repeated, late or refused report is an
 * ordinary answer the gateway acts on.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { type Timestamp, timestampMs } from "@bufbuild/protobuf/wkt";
import {
  LineOutcome as LineOutcomeMessage,
  type ReportLineRequest,
  type ReportLineResponseSchema,
  type SyncLineRequest,
  type SyncLineResponseSchema,
} from "../../../gen/channel/v1/pstn_pb.js";
import { Failure } from "../failure.js";
import { type Caller, type LineChange, type LineOutcome, PSTN_GATEWAY_SCOPE, type Store } from "../ports.js";
import { participantMessage, stateMessage } from "./read-state.js";
import { TokenRefused } from "../token-refusal.js";

const NEEDS_GATEWAY_SCOPE = `reporting the line needs a token with the scope ${PSTN_GATEWAY_SCOPE}`;

const OUTCOMES: Readonly<Record<LineOutcome, LineOutcomeMessage>> = {
  applied: LineOutcomeMessage.APPLIED,
  duplicate: LineOutcomeMessage.DUPLICATE,
  stale: LineOutcomeMessage.STALE,
  refused: LineOutcomeMessage.REFUSED,
  not_on_line: LineOutcomeMessage.NOT_ON_LINE,
  line_full: LineOutcomeMessage.LINE_FULL,
  unchanged: LineOutcomeMessage.UNCHANGED,
};

/** What the gateway may tell its caller, for the outcomes that need a reason. */
const REASONS: Partial<Record<LineOutcome, string>> = {
  refused: "the host muted you; only the host can unmute you",
  line_full: "the line is full (PSTN_MAX_LINE)",
};

export class LineReports {
  constructor(
    private readonly store: Store,
    private readonly now: () => number = Date.now,
  ) {}

  async report(caller: Caller, req: ReportLineRequest): Promise<MessageInitShape<typeof ReportLineResponseSchema>> {
    checkGateway(caller);
    const at = this.now();
    const answer = await this.store.line.report({
      project: caller.project,
      channel: req.channelId,
      uid: req.uid,
      sequence: String(req.sequence),
      change: changeOf(req, at),
      by: caller.subject,
      at,
    });
    return {
      outcome: OUTCOMES[answer.outcome],
      participant: participantMessage(answer.participant),
      reason: REASONS[answer.outcome] ?? "",
    };
  }

  async sync(caller: Caller, req: SyncLineRequest): Promise<MessageInitShape<typeof SyncLineResponseSchema>> {
    checkGateway(caller);
    const seen = new Set<string>();
    for (const m of req.members) {
      if (seen.has(m.uid))
        throw new Failure("invalid", { detail: `members: uid ${JSON.stringify(m.uid)} is listed twice` });
      seen.add(m.uid);
    }
    const at = this.now();
    const members = req.members.map((m) => ({ uid: m.uid, callerId: m.callerId, joinedAt: millisOr(m.joinedAt, at) }));
    const { joined, left } = await this.store.line.sync({
      project: caller.project,
      channel: req.channelId,
      sequence: String(req.sequence),
      members,
      by: caller.subject,
      at,
    });
    const snapshot = await this.store.getPstnSnapshot(caller.project, req.channelId);
    return { joined, left, state: stateMessage(req.channelId, snapshot) };
  }
}

function checkGateway(caller: Caller): void {
  if (!caller.scopes.has(PSTN_GATEWAY_SCOPE))
    throw new Failure("permission_denied", { detail: NEEDS_GATEWAY_SCOPE, cause: new TokenRefused("missing_scope") });
}

function changeOf(req: ReportLineRequest, at: number): LineChange {
  const c = req.change;
  switch (c.case) {
    case "join":
      return { kind: "join", callerId: c.value.callerId, joinedAt: millisOr(c.value.joinedAt, at) };
    case "leave":
      return { kind: "leave" };
    case "presence":
      return { kind: "presence" };
    // `mute` and `raised` have explicit presence and validation requires them; the fallbacks are unreachable.
    case "keypadMute":
      return { kind: "keypad_mute", mute: c.value.mute ?? false };
    case "hand":
      return { kind: "hand", raised: c.value.raised ?? false };
    default:
      // Validation requires one of them; unreachable.
      throw new Failure("invalid", { detail: "change: exactly one field is required" });
  }
}

/** A timestamp as ms since the epoch (negative ones as 0), or `fallback` when absent. */
function millisOr(t: Timestamp | undefined, fallback: number): number {
  return t === undefined ? fallback : Math.max(0, Math.trunc(timestampMs(t)));
}
