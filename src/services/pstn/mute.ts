/**
 * Mute or unmute a telephone participant. Transport-free: the caller is
 * already authenticated and the request already validated against the proto
 * rules (src/server/call/pipeline.ts does both, in that order).
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { MuteRequest, MuteResponseSchema } from "../../../gen/channel/v1/pstn_pb.js";
import type { Caller, Store } from "../ports.js";
import type { PassphraseGuard } from "../passphrase-guard.js";
import { hostChannel } from "./host-passphrase.js";

export class PstnControl {
  constructor(
    private readonly store: Store,
    private readonly guard: PassphraseGuard,
    private readonly now: () => number = Date.now,
  ) {}

  /** Made once, not per mute. */
  private readonly lookup = (project: string, passphrase: string) => this.store.lookupPassphrase(project, passphrase);

  async mute(caller: Caller, req: MuteRequest): Promise<MessageInitShape<typeof MuteResponseSchema>> {
    // `mute` has explicit presence and validation requires it; the fallback is unreachable.
    const mute = req.mute ?? false;
    const { guess, record } = await hostChannel(this.guard, this.lookup, caller, req.passphrase);
    // A hit gives its guess back beside the write: no round trip of latency added.
    const givingBack = guess.giveBack();
    await this.store.setMute({
      project: record.project,
      channel: record.channel,
      uid: req.uid,
      mute,
      by: caller.subject,
      at: this.now(),
      expireAt: record.expireAt, // always present, undefined or not: one shape for every mute's change
    });
    await givingBack;
    return { uid: req.uid, mute };
  }
}
