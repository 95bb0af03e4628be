/**
 * Field layout of a channel's line (docs/redis-schema.md), shared by the Redis
 * and the in-memory store: the participant records of the line hash, the
 * policy hash, the fields of the line's events on the channel's event stream,
 * and the snapshot read from them all. Parsers treat anything malformed as
 * absent, as channel-records.ts does.
 */
import type { LeaveReason, LineEventKind, MuteEvent } from "../../services/pstn/event-ports.js";
import {
  DEFAULT_LINE_POLICY,
  type LinePolicy,
  type MuteSetter,
  type PstnParticipantState,
  type PstnSnapshot,
} from "../../services/pstn/snapshot.js";
import { type Fields, parseMillis } from "./channel-records.js";

/** A participant's record in the line hash (JSON; the Lua scripts read and write the same fields). */
export interface LineRecord {
  /** On the line: 1, else 0 (left; the record keeps the sequence, so a late join stays late). */
  readonly on: 0 | 1;
  /** The gateway's last sequence applied, 20 decimal digits (so strings compare as numbers). */
  readonly seq: string;
  readonly caller: string;
  readonly joined: number;
  readonly hand: 0 | 1;
  readonly hand_at?: number;
}

/** The gateway's sequence (decimal uint64) as the records keep it: 20 digits, zero-padded. */
export function sequenceKey(sequence: string | bigint): string {
  return String(sequence).padStart(20, "0");
}

export function parseLineRecord(value: string | undefined): LineRecord | undefined {
  if (value === undefined) return undefined;
  let r: unknown;
  try {
    r = JSON.parse(value);
  } catch {
    return undefined;
  }
  if (typeof r !== "object" || r === null) return undefined;
  const { on, seq, caller, joined, hand, hand_at } = r as Record<string, unknown>;
  if ((on !== 0 && on !== 1) || typeof seq !== "string" || !/^\d{20}$/.test(seq)) return undefined;
  return {
    on,
    seq,
    caller: typeof caller === "string" ? caller : "",
    joined: isMillis(joined) ? joined : 0,
    hand: hand === 1 ? 1 : 0,
    ...(isMillis(hand_at) ? { hand_at } : {}),
  };
}

function isMillis(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

/** The policy hash's fields as a policy; missing fields keep the default. */
export function parsePolicy(fields: Fields): LinePolicy {
  return {
    muteOnJoin: fields.mute_on_join === undefined ? DEFAULT_LINE_POLICY.muteOnJoin : fields.mute_on_join === "1",
    allowSelfUnmute: fields.allow_self_unmute === "0" ? false : DEFAULT_LINE_POLICY.allowSelfUnmute,
  };
}

/**
 * A channel's snapshot from its mute hash, meta hash, line hash, policy hash
 * and the id of its newest event: every uid on the line or with a `1`/`0`
 * mute state. Maps, not objects, so any uid (`__proto__` too) is a uid.
 */
export function parseLineSnapshot(
  hashes: {
    readonly mute: ReadonlyMap<string, string>;
    readonly meta: ReadonlyMap<string, string>;
    readonly line: ReadonlyMap<string, string>;
    readonly policy: Fields;
  },
  asOfEventId: string,
): PstnSnapshot {
  const uids = new Set<string>();
  for (const [uid, value] of hashes.mute) if (value === "1" || value === "0") uids.add(uid);
  const records = new Map<string, LineRecord>();
  for (const [uid, value] of hashes.line) {
    const record = parseLineRecord(value);
    if (record?.on === 1) {
      records.set(uid, record);
      uids.add(uid);
    }
  }
  const participants: PstnParticipantState[] = [];
  for (const uid of uids)
    participants.push(participantState(uid, hashes.mute.get(uid), hashes.meta.get(uid), records.get(uid)));
  return { participants, asOfEventId, policy: parsePolicy(hashes.policy) };
}

/** One participant's state from its mute flag, its meta value and its line record (each may be missing). */
export function participantState(
  uid: string,
  flag: string | undefined,
  meta: string | undefined,
  record: LineRecord | undefined,
): PstnParticipantState {
  const on = record?.on === 1;
  return {
    uid,
    mute: flag === "1",
    ...parseMeta(meta),
    onLine: on,
    ...(on && record !== undefined
      ? {
          callerId: record.caller,
          joinedAt: record.joined,
          hand: record.hand === 1,
          ...(record.hand_at === undefined ? {} : { handAt: record.hand_at }),
        }
      : {}),
  };
}

const SETTERS: readonly string[] = ["self", "policy"];

/** `at`, `by` and the setter of a uid's meta value (`{"at":…,"by":…,"event_id":…[,"setter":…]}`). */
export function parseMeta(value: string | undefined): { updatedAt?: number; updatedBy?: string; setter?: MuteSetter } {
  if (value === undefined) return {};
  let meta: unknown;
  try {
    meta = JSON.parse(value);
  } catch {
    return {};
  }
  if (typeof meta !== "object" || meta === null) return {};
  const { at, by, setter } = meta as Record<string, unknown>;
  return {
    ...(isMillis(at) ? { updatedAt: at } : {}),
    ...(typeof by === "string" ? { updatedBy: by } : {}),
    // The host's mutes (Mute, MuteAll) write no setter: absent is the host.
    setter: typeof setter === "string" && SETTERS.includes(setter) ? (setter as MuteSetter) : "host",
  };
}

const KINDS: readonly string[] = ["join", "leave", "hand", "policy", "mute_all"];
const REASONS: readonly string[] = ["reported", "sync", "lease"];

/**
 * An entry of the event stream: a mute change (no `kind`, as Mute writes
 * it), or an event of the line. Undefined for anything malformed.
 */
export function parseStreamEvent(id: string, fields: Fields): MuteEvent | undefined {
  const { uid, mute, by, kind } = fields;
  const at = parseMillis(fields.at);
  if (uid === undefined || (mute !== "1" && mute !== "0") || by === undefined || at === undefined) return undefined;
  const base = { id, uid, mute: mute === "1", by, at };
  if (kind === undefined) {
    if (!uid) return undefined;
    return { ...base, ...setterOf(fields), ...(fields.all === "1" ? { all: true } : {}) };
  }
  if (!KINDS.includes(kind)) return undefined;
  const channelWide = kind === "policy" || kind === "mute_all";
  if (channelWide !== (uid === "")) return undefined;
  const event: MuteEvent = { ...base, kind: kind as LineEventKind };
  switch (kind) {
    case "join":
      return { ...event, callerId: fields.caller ?? "", ...setterOf(fields) };
    case "leave":
      return { ...event, reason: REASONS.includes(fields.reason ?? "") ? (fields.reason as LeaveReason) : "reported" };
    case "hand":
      return { ...event, hand: fields.hand === "1", ...setterOf(fields) };
    case "policy":
      return { ...event, policy: parsePolicy(fields) };
    default:
      return { ...event, changed: parseMillis(fields.changed) ?? 0 };
  }
}

function setterOf(fields: Fields): { setter?: MuteSetter } {
  const s = fields.setter;
  return s === "self" || s === "policy" || s === "host" ? { setter: s } : {};
}
