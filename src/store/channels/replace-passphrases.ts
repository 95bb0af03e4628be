/**
 * `AdminStore.createChannel` (tests, and other callers of the store; the CLI and
 * the demo go through the API's domain service instead) over the channel
 * directory's primitives, so a channel it writes is indexed like one the API
 * creates — same order of steps (src/store/channels/steps.ts): the hashes join the
 * channel record and the index first, then the records are claimed, then the
 * passphrases that no longer open the channel go, records before hashes.
 * Unlike the API's `create`, it also changes an existing channel: afterwards
 * exactly the given passphrases open it.
 */
import type { ChannelSteps } from "./steps.js";
import { type ChannelPassphrase, passphraseConflict } from "../schema/admin-checks.js";
import { parseMillis, parsePassphrase } from "../schema/channel-records.js";
import { listedPassphrases, PENDING_FIELD, passField, pendingValue } from "../schema/channel-index-records.js";

/**
 * `unindexedShas`: the passphrase hashes of the channel found by SCAN, asked
 * only when the channel had no record yet (written by another writer, or by
 * the CLI before the indexes), so that its old passphrases go too.
 */
export async function replaceChannelPassphrases(
  steps: ChannelSteps,
  project: string,
  channel: string,
  wanted: readonly ChannelPassphrase[],
  unindexedShas: () => Promise<string[]>,
  now: number,
): Promise<void> {
  const p = steps.primitives;
  const want = wanted.map((w) => ({ sha: steps.digest(project, w.passphrase), role: w.record.role }));
  // Look before writing, so a conflict normally leaves nothing behind…
  for (const { sha, role } of want) {
    const owner = parsePassphrase(await p.readPassphrase(sha));
    if (owner !== undefined && (owner.project !== project || owner.channel !== channel)) {
      throw passphraseConflict(role, owner);
    }
  }
  const before = await p.readRecord(project, channel);
  const fresh = Object.keys(before).length === 0;
  // Marked like a rotation, so the doctor leaves the hashes alone while their records are being claimed.
  const fields = {
    ...Object.fromEntries(want.map((w) => [passField(w.sha), w.role])),
    [PENDING_FIELD]: pendingValue("rotate", now),
  };
  if (!fresh || !(await p.writeRecord(project, channel, "create", { created_at: String(now), ...fields }, undefined))) {
    await p.writeRecord(project, channel, "update", fields, undefined);
  }
  await p.index(project, channel);
  // …and claim atomically, in case another writer got there in between.
  const expireAt = parseMillis(before.expire_at);
  const created: string[] = [];
  for (const { sha, role } of want) {
    const claim = await p.claimPassphrase(sha, { project, channel, role }, expireAt, steps.keyId);
    if (!claim.claimed) {
      await Promise.all(created.map((s) => p.releasePassphrase(s, project, channel)));
      const listedBefore = new Set(listedPassphrases(before).map((l) => l.sha));
      const added = want.filter((w) => !listedBefore.has(w.sha)).map((w) => passField(w.sha));
      await p.dropRecordFields(project, channel, [...added, PENDING_FIELD]);
      throw passphraseConflict(role, claim.owner);
    }
    if (claim.created) created.push(sha);
  }
  const keep = new Set(want.map((w) => w.sha));
  const old = [...listedPassphrases(before).map((l) => l.sha), ...(fresh ? await unindexedShas() : [])];
  const stale = [...new Set(old)].filter((s) => !keep.has(s));
  await Promise.all(stale.map((s) => p.releasePassphrase(s, project, channel)));
  await p.dropRecordFields(project, channel, [...stale.map(passField), PENDING_FIELD]);
}
