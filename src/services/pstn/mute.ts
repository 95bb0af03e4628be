/**
 * Mute or unmute a telephone participant. Transport-free: the caller is
 * already authenticated and the request already validated against the proto
 * rules (src/server/call/pipeline.ts does both, in that order).
 */
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { MuteRequest, MuteResponseSchema } from "../../../gen/channel/v1/pstn_pb.js";
import { Failure } from "../failure.js";
import type { Caller, Store } from "../ports.js";
import type { PassphraseGuard } from "../passphrase-guard.js";

/** One message for every refusal, so a caller cannot tell an unknown passphrase from another project's. */
const NOT_A_HOST_PASSPHRASE = "the passphrase is not the host passphrase of a channel of this project";

export class PstnControl {
  constructor(
    private readonly store: Store,
    private readonly guard: PassphraseGuard,
    private readonly now: () => number = Date.now,
  ) {}

  async mute(caller: Caller, req: MuteRequest): Promise<MessageInitShape<typeof MuteResponseSchema>> {
    // `mute` has explicit presence and validation requires it; the fallback is unreachable.
    const mute = req.mute ?? false;
    // The guess is taken beside the lookup: one round trip of latency, and no answer without a guess.
    // (Indexed, not destructured: destructuring an array walks an iterator, allocated on every mute.)
    const both = await Promise.all([this.guard.take(caller), this.store.lookupPassphrase(req.passphrase)]);
    const record = both[1];
    if (record === undefined || record.project !== caller.project || record.role !== "host") {
      // The guess stays taken: this miss counts.
      throw new Failure("permission_denied", { detail: NOT_A_HOST_PASSPHRASE });
    }
    // A hit gives its guess back beside the write: no round trip of latency added.
    const givingBack = both[0].giveBack();
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
