/**
 * Field layout of the documented records (docs/redis-schema.md), shared by the Redis and the in-memory store so both read and
 * write exactly the same thing (conversion tasks: conversion-records.ts).
 * Parsers return undefined for anything malformed: other services write these
 * records, and a record we cannot trust is treated as absent rather than
 * half-used.
 */
import {
  type ChangedBy,
  MAX_CONVERSION_QPS,
  type MuteChange,
  type PassphraseRecord,
  REGIONS,
  type Region,
  type WhiteboardSettings,
} from "../../services/ports.js";
import { Failure } from "../../services/failure.js";
import type { KeyRing } from "../../secrets/key-ring.js";
import { open, SealedFieldError, seal } from "../../secrets/sealed-fields.js";
import { checkProjectId } from "./keys.js";

export type Fields = Readonly<Record<string, string>>;

export function parsePassphrase(fields: Fields): PassphraseRecord | undefined {
  const { project, channel, role } = fields;
  if (!project || !channel) return undefined;
  // No token names such a project, and its channel's keys would be another project's
  // (`a/b` + `c` is `a` + `b/c`): repairs must not index it there.
  if (checkProjectId(project) !== undefined) return undefined;
  if (role !== "host" && role !== "attendee") return undefined;
  const expireAt = parseMillis(fields.expire_at);
  return expireAt === undefined ? { project, channel, role } : { project, channel, role, expireAt };
}

/**
 * The id of the PASSPHRASE_KEYS key a passphrase record's digest was made
 * under (field `key`); undefined for a record written before there were keys,
 * whose key carries the passphrase's bare sha256.
 */
export function passphraseKeyId(fields: Fields): string | undefined {
  return fields.key || undefined;
}

export function passphraseFields(record: PassphraseRecord, keyId?: string): Fields {
  return {
    project: record.project,
    channel: record.channel,
    role: record.role,
    ...(record.expireAt === undefined ? {} : { expire_at: String(record.expireAt) }),
    ...(keyId === undefined ? {} : { key: keyId }),
  };
}

export function isRegion(value: unknown): value is Region {
  return typeof value === "string" && (REGIONS as readonly string[]).includes(value);
}

/**
 * Usable settings, or undefined. When a record carries both an SDK token and a
 * key pair (another writer may do that), the SDK token wins: it is what the
 * project's operator explicitly issued. An unreadable `conversion_qps` reads
 * as absent (the default plan) rather than making the whole record unusable.
 */
export function parseWhiteboard(fields: Fields): WhiteboardSettings | undefined {
  if (fields.enabled !== "1") return undefined;
  const region = fields.region;
  if (!isRegion(region)) return undefined;
  const conversionQps = parseConversionQps(fields.conversion_qps);
  const qps = conversionQps === undefined ? {} : { conversionQps };
  const { sdk_token: sdkToken, access_key: accessKey, secret_key: secretKey } = fields;
  if (sdkToken) return { region, credentials: { sdkToken }, ...qps };
  if (accessKey && secretKey) return { region, credentials: { accessKey, secretKey }, ...qps };
  return undefined;
}

/** A stored `conversion_qps`: a decimal whole number the API could have set, or undefined. */
function parseConversionQps(value: string | undefined): number | undefined {
  if (value === undefined || !/^[1-9][0-9]{0,3}$/.test(value)) return undefined;
  const qps = Number(value);
  return qps <= MAX_CONVERSION_QPS ? qps : undefined;
}

/**
 * Fields to set, and fields to remove: those of the other credential kind,
 * `conversion_qps` when the settings leave it out (setting replaces the
 * settings, so that is the default plan again), and `updated_at`/`updated_by`
 * when nobody in particular made the change (the CLI), so a record never
 * names the author of an older change.
 */
export function whiteboardFields(settings: WhiteboardSettings, changed?: ChangedBy): { set: Fields; remove: string[] } {
  const qps = settings.conversionQps;
  const base = { enabled: "1", region: settings.region, ...(qps === undefined ? {} : { conversion_qps: String(qps) }) };
  const stamp = changed === undefined ? {} : { updated_at: String(changed.at), updated_by: changed.by };
  const dropped = [
    ...(qps === undefined ? ["conversion_qps"] : []),
    ...(changed === undefined ? ["updated_at", "updated_by"] : []),
  ];
  const c = settings.credentials;
  if ("sdkToken" in c) {
    return { set: { ...base, sdk_token: c.sdkToken, ...stamp }, remove: ["access_key", "secret_key", ...dropped] };
  }
  return {
    set: { ...base, access_key: c.accessKey, secret_key: c.secretKey, ...stamp },
    remove: ["sdk_token", ...dropped],
  };
}

/**
 * The whiteboard record's fields that hold secrets. Both stores write them
 * sealed (src/secrets/sealed-fields.ts) under SECRETS_KEYS, and read them
 * sealed or, as written before sealing or by another writer, in clear.
 */
export const WHITEBOARD_SECRET_FIELDS: readonly string[] = ["sdk_token", "secret_key"];

/** `fields` with each secret field sealed under the ring's current key, for `project`'s record. */
export function sealWhiteboardFields(ring: KeyRing, project: string, fields: Fields): Fields {
  const sealed: Record<string, string> = { ...fields };
  for (const field of WHITEBOARD_SECRET_FIELDS) {
    const value = fields[field];
    if (value !== undefined) sealed[field] = seal(ring, project, field, value);
  }
  return sealed;
}

/**
 * Usable settings with their secrets opened, or undefined (parseWhiteboard).
 * Only the credential in use is opened. A secret that does not open (its key
 * is missing from SECRETS_KEYS, or it was altered) is `Failure("internal")`:
 * a configuration or data fault to fix, not a project without settings. The
 * cause says which key or field; nothing carries the value.
 */
export function openWhiteboard(ring: KeyRing, project: string, fields: Fields): WhiteboardSettings | undefined {
  const settings = parseWhiteboard(fields);
  if (settings === undefined) return undefined;
  const c = settings.credentials;
  try {
    if ("sdkToken" in c)
      return { ...settings, credentials: { sdkToken: open(ring, project, "sdk_token", c.sdkToken) } };
    return {
      ...settings,
      credentials: { accessKey: c.accessKey, secretKey: open(ring, project, "secret_key", c.secretKey) },
    };
  } catch (e) {
    if (e instanceof SealedFieldError) throw new Failure("internal", { cause: e });
    throw e;
  }
}

/** Why these settings cannot be stored, or undefined. */
export function checkWhiteboard(settings: WhiteboardSettings): string | undefined {
  if (!isRegion(settings.region)) return `region must be one of ${REGIONS.join(", ")}`;
  const qps = settings.conversionQps;
  if (qps !== undefined && !(Number.isInteger(qps) && qps >= 1 && qps <= MAX_CONVERSION_QPS)) {
    return `conversion qps must be a whole number from 1 to ${MAX_CONVERSION_QPS}`;
  }
  const c = settings.credentials;
  if ("sdkToken" in c) return c.sdkToken ? undefined : "sdk token must not be empty";
  return c.accessKey && c.secretKey ? undefined : "access key and secret key must not be empty";
}

/** Mute hash value and stream `mute` field: `1` muted, `0` unmuted. */
export function muteFlag(mute: boolean): "1" | "0" {
  return mute ? "1" : "0";
}

/** Stream entry fields of a mute change, in the documented order. */
export function muteEventFields(change: MuteChange): Fields {
  return { uid: change.uid, mute: muteFlag(change.mute), by: change.by, at: String(change.at) };
}

/**
 * The start of a uid's value in the meta hash, up to where the script appends
 * the new stream entry's id and `"}`: `{"at":<ms>,"by":"<sub>","event_id":"`.
 * Written here rather than in Lua so both stores write the same bytes.
 */
export function muteMetaHead(change: Pick<MuteChange, "at" | "by">): string {
  return `{"at":${String(change.at)},"by":${JSON.stringify(change.by)},"event_id":"`;
}

/** The whole meta hash value of a change whose stream entry is `eventId`; `setter` when the participant or the policy made it (the line scripts write the same). */
export function muteMetaValue(
  change: Pick<MuteChange, "at" | "by">,
  eventId: string,
  setter?: "self" | "policy",
): string {
  return `${muteMetaHead(change)}${eventId}"${setter === undefined ? "" : `,"setter":"${setter}"`}}`;
}

/** The mute hash as uid → muted; values other than `1`/`0` are skipped. */
export function parseMuteState(fields: Fields): Record<string, boolean> {
  const state: Record<string, boolean> = {};
  for (const [uid, value] of Object.entries(fields)) {
    if (value === "1" || value === "0") state[uid] = value === "1";
  }
  return state;
}

/** Field/value pairs of a flat reply (`[f1, v1, f2, v2, …]`) as a map. */
export function pairsToMap(pairs: readonly string[]): Map<string, string> {
  const map = new Map<string, string>();
  for (let i = 0; i + 1 < pairs.length; i += 2) map.set(pairs[i] as string, pairs[i + 1] as string);
  return map;
}

/** Field/value pairs of a raw stream entry (`[f1, v1, f2, v2, …]`). */
export function pairsToFields(pairs: readonly string[]): Fields {
  const fields: Record<string, string> = {};
  for (let i = 0; i + 1 < pairs.length; i += 2) {
    const field = pairs[i];
    const value = pairs[i + 1];
    if (field !== undefined && value !== undefined) fields[field] = value;
  }
  return fields;
}

/** Milliseconds since the epoch as a record writes them (decimal digits), or undefined. */
export function parseMillis(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d{1,16}$/.test(value)) return undefined;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : undefined;
}
