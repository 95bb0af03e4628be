/**
 * `boardline whiteboard reseal`, for both stores over their primitives: a
 * SCAN pass over the whiteboard records that seals again, under the current
 * SECRETS_KEYS key, each secret field in clear (written before sealing, or by
 * another writer) or under an older key. Each record is rewritten by a
 * compare-and-set of the fields as they were read, so a change made meanwhile
 * (sealed by its writer) is never overwritten; a record already under the
 * current key is not written at all, so the pass is idempotent and a stopped
 * one can be run again or resumed from its cursor.
 */
import type { ReindexOptions, ResealReport } from "../services/ports.js";
import type { KeyRing } from "../secrets/key-ring.js";
import { needsReseal, open, SealedFieldError, seal } from "../secrets/sealed-fields.js";
import type { ChannelPrimitives } from "./channels/primitives.js";
import { throttledScan } from "./channels/scan.js";
import { type Fields, WHITEBOARD_SECRET_FIELDS } from "./schema/channel-records.js";
import type { KeySchema } from "./schema/keys.js";

/** The one write the pass needs (each store's AdminPrimitives has it). */
export interface WhiteboardRewriter {
  /** Writes `replacement` over the project's whiteboard record only while it still holds `expected`. */
  replaceWhiteboardFields(project: string, expected: Fields, replacement: Fields): Promise<boolean>;
}

export interface ResealParts {
  readonly channels: ChannelPrimitives;
  readonly admin: WhiteboardRewriter;
  readonly keys: KeySchema;
  readonly ring: KeyRing;
}

export async function resealWhiteboards(parts: ResealParts, options: ReindexOptions = {}): Promise<ResealReport> {
  const { channels, keys } = parts;
  let scanned = 0;
  let resealed = 0;
  let changed = 0;
  const unreadable: string[] = [];
  const cursor = await throttledScan(channels, keys.whiteboardPattern(), options, async (key) => {
    const project = keys.whiteboardOf(key);
    if (project === undefined) return;
    scanned++;
    const outcome = await resealOne(parts, project);
    if (outcome === "resealed") resealed++;
    else if (outcome === "changed") changed++;
    else if (outcome === "unreadable") unreadable.push(project);
  });
  return { scanned, resealed, changed, unreadable, cursor };
}

async function resealOne(
  { channels, admin, ring }: ResealParts,
  project: string,
): Promise<"resealed" | "current" | "changed" | "unreadable"> {
  const fields = await channels.readWhiteboardRecord(project);
  const stale = stalePairs(ring, fields);
  if (Object.keys(stale).length === 0) return "current";
  const replacement: Record<string, string> = {};
  try {
    for (const [field, stored] of Object.entries(stale)) {
      replacement[field] = seal(ring, project, field, open(ring, project, field, stored));
    }
  } catch (e) {
    if (e instanceof SealedFieldError) return "unreadable";
    throw e;
  }
  return (await admin.replaceWhiteboardFields(project, stale, replacement)) ? "resealed" : "changed";
}

/** The record's secret fields that are in clear or under an older key; empty ones are not secrets. */
function stalePairs(ring: KeyRing, fields: Fields): Fields {
  const stale: Record<string, string> = {};
  for (const field of WHITEBOARD_SECRET_FIELDS) {
    const stored = fields[field];
    if (stored !== undefined && stored !== "" && needsReseal(ring, stored)) stale[field] = stored;
  }
  return stale;
}
