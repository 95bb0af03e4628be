/**
 * Field layout of the records of channels managed through the API
 * (docs/architecture.md, "Channels through the API"): the channel's own hash
 * `chan:{<project>/<channel>}:channel`, the project's `admin-events` stream,
 * and what the admin API may show of a whiteboard record. Shared by both
 * stores and the repair functions, so they read and write the same bytes.
 */
import {
  type AdminEvent,
  type ChannelInfo,
  DEFAULT_CONVERSION_QPS,
  type PassphraseRole,
  type WhiteboardInfo,
} from "../../services/ports.js";
import { type Fields, isRegion, parseMillis, parseWhiteboard } from "./channel-records.js";

/** A channel hash field naming one passphrase that opens the channel: `pass:<sha256 hex>` → role. */
export const PASS_FIELD_PREFIX = "pass:";
/** Set while a write of the channel is under way: `<operation>@<ms>[@<sha>]`; the doctor finishes or undoes it. */
export const PENDING_FIELD = "pending";

export type PendingOperation = "create" | "rotate" | "delete";

export interface Pending {
  readonly operation: PendingOperation;
  readonly since: number;
  /** For a rotation: the sha256 hex of the new passphrase. */
  readonly sha: string | undefined;
}

export function passField(sha: string): string {
  return `${PASS_FIELD_PREFIX}${sha}`;
}

export function pendingValue(operation: PendingOperation, since: number, sha?: string): string {
  return sha === undefined ? `${operation}@${since}` : `${operation}@${since}@${sha}`;
}

export function parsePending(value: string | undefined): Pending | undefined {
  if (value === undefined) return undefined;
  const [operation, at, sha] = value.split("@");
  const since = parseMillis(at);
  if ((operation !== "create" && operation !== "rotate" && operation !== "delete") || since === undefined) {
    // Unreadable: treat it as an old interrupted rotation, which only tidies the passphrase fields.
    return { operation: "rotate", since: 0, sha: undefined };
  }
  return { operation, since, sha };
}

/** The passphrase hashes a channel hash lists, with their roles. */
export function listedPassphrases(fields: Fields): Array<{ sha: string; role: PassphraseRole }> {
  const out: Array<{ sha: string; role: PassphraseRole }> = [];
  for (const [field, role] of Object.entries(fields)) {
    if (!field.startsWith(PASS_FIELD_PREFIX)) continue;
    if (role !== "host" && role !== "attendee") continue;
    out.push({ sha: field.slice(PASS_FIELD_PREFIX.length), role });
  }
  return out;
}

/**
 * The channel as the admin API shows it, or undefined when there is no record.
 * A channel whose creation has not finished is shown too: a passphrase of it
 * may open it already, and no passphrase may open a channel List does not show.
 */
export function parseChannelInfo(project: string, channel: string, fields: Fields): ChannelInfo | undefined {
  if (Object.keys(fields).length === 0) return undefined;
  const roles = new Set(listedPassphrases(fields).map((p) => p.role));
  const createdBy = fields.created_by;
  return {
    project,
    channel,
    createdAt: parseMillis(fields.created_at),
    createdBy: createdBy === undefined || createdBy === "" ? undefined : createdBy,
    expireAt: parseMillis(fields.expire_at),
    roles: (["host", "attendee"] as const).filter((r) => roles.has(r)),
  };
}

/** The fields of a new channel's hash, `pending` included (cleared once its passphrase records are written). */
export function newChannelFields(input: {
  readonly createdAt: number;
  readonly createdBy: string;
  readonly expireAt: number | undefined;
  readonly passphrases: ReadonlyArray<{ readonly sha: string; readonly role: PassphraseRole }>;
  /** The writer's clock, which the doctor ages the mark by (`createdAt` is the caller's). */
  readonly pendingSince: number;
}): Record<string, string> {
  const fields: Record<string, string> = {
    created_at: String(input.createdAt),
    [PENDING_FIELD]: pendingValue("create", input.pendingSince),
  };
  if (input.createdBy !== "") fields.created_by = input.createdBy;
  if (input.expireAt !== undefined) fields.expire_at = String(input.expireAt);
  for (const { sha, role } of input.passphrases) fields[passField(sha)] = role;
  return fields;
}

/** Stream entry fields of an admin event, in the documented order; absent parts are left out. */
export function adminEventFields(event: AdminEvent): Fields {
  return {
    at: String(event.at),
    by: event.by,
    action: event.action,
    ...(event.channel === undefined ? {} : { channel: event.channel }),
    ...(event.detail === undefined ? {} : { detail: event.detail }),
  };
}

/** A whiteboard record as the admin API shows it: region, credential kind, conversion QPS, set at/by — never a secret. */
export function parseWhiteboardInfo(fields: Fields): WhiteboardInfo | undefined {
  const settings = parseWhiteboard(fields);
  if (settings === undefined || !isRegion(settings.region)) return undefined;
  const updatedBy = fields.updated_by;
  return {
    region: settings.region,
    credential: "sdkToken" in settings.credentials ? "sdk_token" : "access_key",
    conversionQps: settings.conversionQps ?? DEFAULT_CONVERSION_QPS,
    updatedAt: parseMillis(fields.updated_at),
    updatedBy: updatedBy === undefined || updatedBy === "" ? undefined : updatedBy,
  };
}
