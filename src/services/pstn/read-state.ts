/**
 * Read the mute state of a channel's telephone participants (GetPstnState).
 * Transport-free: the caller is already authenticated and the request
 * validated. The channel is named by a passphrase of it (host or attendee:
 * reading is not a control action), or by its id with a token of scope
 * `pstn.gateway`; either way only within the caller's project, so another
 * project's channel reads like an unknown one.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  type GetPstnStateRequest,
  type PstnParticipantSchema,
  PstnSetter,
  type PstnStateSchema,
} from "../../../gen/channel/v1/pstn_pb.js";
import { Failure } from "../failure.js";
import type { Guess, PassphraseGuard } from "../passphrase-guard.js";
import { type Caller, PSTN_GATEWAY_SCOPE, type Store } from "../ports.js";
import { type MuteSetter, type PstnParticipantState, type PstnSnapshot, participantsByUid } from "./snapshot.js";
import { TokenRefused } from "../token-refusal.js";

type PstnStateMessage = MessageInitShape<typeof PstnStateSchema>;

/** One message for every refused passphrase, so a caller cannot tell an unknown passphrase from another project's. */
const NOT_A_CHANNEL_PASSPHRASE = "the passphrase is not a passphrase of a channel of this project";

const NEEDS_GATEWAY_SCOPE = `naming a channel by channel_id needs a token with the scope ${PSTN_GATEWAY_SCOPE}`;

export class PstnStateReader {
  constructor(
    private readonly store: Store,
    private readonly guard: PassphraseGuard,
  ) {}

  /** The channel's participants ordered by uid, and the id of the last mute event included. */
  async getState(caller: Caller, req: GetPstnStateRequest): Promise<PstnStateMessage> {
    const { channel, guess } = await this.channelOf(caller, req);
    // A right passphrase gives its guess back beside the read.
    const givingBack = guess?.giveBack();
    const snapshot = await this.store.getPstnSnapshot(caller.project, channel);
    await givingBack;
    return stateMessage(channel, snapshot);
  }

  /** The channel the request names within the caller's project, and the guess a passphrase took; or the refusal. */
  private async channelOf(caller: Caller, req: GetPstnStateRequest): Promise<{ channel: string; guess?: Guess }> {
    switch (req.channel.case) {
      case "channelId":
        if (!caller.scopes.has(PSTN_GATEWAY_SCOPE))
          throw new Failure("permission_denied", {
            detail: NEEDS_GATEWAY_SCOPE,
            cause: new TokenRefused("missing_scope"),
          });
        return { channel: req.channel.value };
      case "passphrase": {
        // As for a mute: a guess taken beside the lookup (none for a proven holder), and kept by every refusal.
        const { guess, record } = await this.guard.lookUp(caller, req.channel.value, (project, p) =>
          this.store.lookupPassphrase(project, p),
        );
        if (record === undefined || record.project !== caller.project) {
          await guess.keep();
          throw new Failure("permission_denied", { detail: NOT_A_CHANNEL_PASSPHRASE });
        }
        return { channel: record.channel, guess };
      }
      default:
        // Validation requires one of them; unreachable.
        throw new Failure("invalid", { detail: "channel: exactly one field is required" });
    }
  }
}

/** The state message of a snapshot (GetPstnState; SyncLine answers it too). */
export function stateMessage(channel: string, snapshot: PstnSnapshot): PstnStateMessage {
  const participants = participantsByUid(snapshot).map(participantMessage);
  return { channelId: channel, participants, asOfEventId: snapshot.asOfEventId, policy: snapshot.policy };
}

const SETTERS: Readonly<Record<MuteSetter, PstnSetter>> = {
  host: PstnSetter.HOST,
  self: PstnSetter.SELF,
  policy: PstnSetter.POLICY,
};

/** The setter of the contract; unspecified when unknown. */
export function setterMessage(setter: MuteSetter | undefined): PstnSetter {
  return setter === undefined ? PstnSetter.UNSPECIFIED : SETTERS[setter];
}

/** One participant, as GetPstnState, SyncLine and ReportLine answer it. */
export function participantMessage(p: PstnParticipantState): MessageInitShape<typeof PstnParticipantSchema> {
  return {
    uid: p.uid,
    mute: p.mute,
    updatedBy: p.updatedBy ?? "",
    ...(p.updatedAt === undefined ? {} : { updatedAt: timestampFromMs(p.updatedAt) }),
    setter: setterMessage(p.setter),
    onLine: p.onLine ?? false,
    callerId: p.callerId ?? "",
    ...(p.joinedAt === undefined ? {} : { joinedAt: timestampFromMs(p.joinedAt) }),
    handRaised: p.hand ?? false,
    ...(p.handAt === undefined ? {} : { handAt: timestampFromMs(p.handAt) }),
  };
}
