/**
 * `Store.lookupPassphrase` for both stores: the record under the current
 * key's digest, else under an older key's or the bare sha256 (records
 * written before the current key), read side by side. A record found there
 * opens its channel as before and is moved to the current key's digest in
 * the background (ChannelSteps.rekey), so rotating PASSPHRASE_KEYS and
 * upgrading from unkeyed records lock nobody out. A passphrase nobody holds
 * costs a second read, after the first; one under the current key, one read.
 */
import type { PassphraseRecord } from "../../services/ports.js";
import { type Fields, parsePassphrase } from "../schema/channel-records.js";
import type { ChannelSteps } from "./steps.js";

export async function lookUpPassphrase(
  steps: ChannelSteps,
  read: (digest: string) => Promise<Fields>,
  project: string,
  passphrase: string,
): Promise<PassphraseRecord | undefined> {
  const [current, ...older] = steps.keys.passphraseDigests(project, passphrase);
  if (current === undefined) return undefined;
  const record = parsePassphrase(await read(current));
  if (record !== undefined || older.length === 0) return record;
  const found = await Promise.all(older.map(async (digest) => parsePassphrase(await read(digest))));
  const at = found.findIndex((r) => r?.project === project);
  const old = found[at];
  const from = older[at];
  if (old === undefined || from === undefined) return undefined;
  // Moved to the current key for the next call; until then (or if that fails) it is found here.
  steps.rekey(old, from, current).catch(() => {});
  return old;
}
