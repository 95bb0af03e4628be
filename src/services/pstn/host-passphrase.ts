/**
 * The channel a host passphrase opens within the caller's project, with the
 * guess its lookup took (src/services/passphrase-guard.ts); or the one
 * refusal every host action gives (Mute, MuteAll, SetPstnPolicy, LowerHands),
 * so a caller cannot tell an unknown passphrase from another project's or an
 * attendee's. The refusal keeps the guess; a hit leaves it to the caller to
 * give back beside its write.
 */
import { Failure } from "../failure.js";
import type { Guess, PassphraseGuard, PassphraseLookup } from "../passphrase-guard.js";
import type { Caller, PassphraseRecord } from "../ports.js";

const NOT_A_HOST_PASSPHRASE = "the passphrase is not the host passphrase of a channel of this project";

export async function hostChannel(
  guard: PassphraseGuard,
  lookup: PassphraseLookup,
  caller: Caller,
  passphrase: string,
): Promise<{ record: PassphraseRecord; guess: Guess }> {
  // The guess is taken beside the lookup (none for a proven holder): no answer without one.
  const { guess, record } = await guard.lookUp(caller, passphrase, lookup);
  if (record === undefined || record.project !== caller.project || record.role !== "host") {
    // The miss counts: the guess stays taken (a proven holder takes its guess now).
    await guess.keep();
    throw new Failure("permission_denied", { detail: NOT_A_HOST_PASSPHRASE });
  }
  return { record, guess };
}
