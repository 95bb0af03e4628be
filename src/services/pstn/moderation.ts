/**
 * The host's moderation of a channel's whole line: MuteAll, SetPstnPolicy and
 * LowerHands. Transport-free: the caller is authenticated and the request
 * validated. The channel is named by its host passphrase, with a guess taken
 * as for a mute (src/services/passphrase-guard.ts); SetPstnPolicy also takes
 * a channel id with the admin scope.
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  LowerHandsRequest,
  LowerHandsResponseSchema,
  MuteAllRequest,
  MuteAllResponseSchema,
  SetPstnPolicyRequest,
  SetPstnPolicyResponseSchema,
} from "../../../gen/channel/v1/pstn_pb.js";
import { Failure } from "../failure.js";
import type { PassphraseGuard } from "../passphrase-guard.js";
import { hostChannel } from "./host-passphrase.js";
import { type Caller, CHANNELS_ADMIN_SCOPE, type LineCall, type Store } from "../ports.js";
import { TokenRefused } from "../token-refusal.js";

const NEEDS_ADMIN_SCOPE = `naming a channel by channel_id needs a token with the scope ${CHANNELS_ADMIN_SCOPE}`;

export class LineModeration {
  constructor(
    private readonly store: Store,
    private readonly guard: PassphraseGuard,
    private readonly now: () => number = Date.now,
  ) {}

  private readonly lookup = (project: string, passphrase: string) => this.store.lookupPassphrase(project, passphrase);

  async muteAll(caller: Caller, req: MuteAllRequest): Promise<MessageInitShape<typeof MuteAllResponseSchema>> {
    const answer = await this.asHost(caller, req.passphrase, (line) =>
      this.store.line.muteAll({
        ...line,
        // `mute` has explicit presence and validation requires it; the fallback is unreachable.
        mute: req.mute ?? false,
        except: req.exceptUids,
        muteOnJoin: req.muteOnJoin,
      }),
    );
    return answer;
  }

  async setPolicy(
    caller: Caller,
    req: SetPstnPolicyRequest,
  ): Promise<MessageInitShape<typeof SetPstnPolicyResponseSchema>> {
    if (req.muteOnJoin === undefined && req.allowSelfUnmute === undefined)
      throw new Failure("invalid", { detail: "mute_on_join or allow_self_unmute: at least one is required" });
    const set = (line: LineCall) =>
      this.store.line.setPolicy({ ...line, muteOnJoin: req.muteOnJoin, allowSelfUnmute: req.allowSelfUnmute });
    switch (req.channel.case) {
      case "channelId": {
        if (!caller.scopes.has(CHANNELS_ADMIN_SCOPE))
          throw new Failure("permission_denied", {
            detail: NEEDS_ADMIN_SCOPE,
            cause: new TokenRefused("missing_scope"),
          });
        const policy = await set({
          project: caller.project,
          channel: req.channel.value,
          by: caller.subject,
          at: this.now(),
        });
        return { policy };
      }
      case "passphrase":
        return { policy: await this.asHost(caller, req.channel.value, set) };
      default:
        // Validation requires one of them; unreachable.
        throw new Failure("invalid", { detail: "channel: exactly one field is required" });
    }
  }

  async lowerHands(caller: Caller, req: LowerHandsRequest): Promise<MessageInitShape<typeof LowerHandsResponseSchema>> {
    const lowered = await this.asHost(caller, req.passphrase, (line) =>
      this.store.line.lowerHands({ ...line, uids: req.uids }),
    );
    return { lowered };
  }

  /**
   * `act` on the channel whose host passphrase this is, as its host; else
   * the refusal Mute gives. The guess is kept by a refusal and given back
   * beside the act.
   */
  private async asHost<T>(caller: Caller, passphrase: string, act: (line: LineCall) => Promise<T>): Promise<T> {
    const { guess, record } = await hostChannel(this.guard, this.lookup, caller, passphrase);
    const givingBack = guess.giveBack();
    try {
      return await act({
        project: record.project,
        channel: record.channel,
        by: caller.subject,
        at: this.now(),
        expireAt: record.expireAt,
      });
    } finally {
      await givingBack;
    }
  }
}
