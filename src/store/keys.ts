/**
 * Key names of the documented Redis schema (DESIGN §4). Other services write
 * these records too, so the names here are a contract: change nothing without
 * changing the design document.
 *
 *   <prefix>pass:{<sha256 hex of passphrase>}              hash
 *   <prefix>proj:{<project>}:whiteboard                    hash
 *   <prefix>chan:{<project>/<channel>}:pstn-mute           hash
 *   <prefix>chan:{<project>/<channel>}:pstn-events         stream
 *   <prefix>conv:{<task uuid>}                             hash
 *
 * About the `{…}` hash tags: Redis Cluster hashes only the text between the
 * first `{` and the first `}` after it. The mute hash and the event stream
 * share everything up to the closing brace we add, so they always share a tag,
 * with one exception: an id that starts with `}` gives an empty tag `{}`, and
 * then Cluster hashes the whole key and the two keys land in different slots
 * (the atomic mute script fails with CROSSSLOT). A `/` in a project id makes
 * `a/b` + `c` and `a` + `b/c` the same channel key. So ids with braces (or a
 * project id with `/`) are refused where records are created (`checkProjectId`,
 * `checkChannelId`, used by the admin functions and the CLI); keys are still
 * built verbatim for records other services wrote, to stay compatible.
 */
import { createHash } from "node:crypto";

export const DEFAULT_KEY_PREFIX = "bl:";

/** Cap of each channel's event stream (XADD MAXLEN ~). */
export const MUTE_EVENTS_MAXLEN = 10_000;

/** Conversion task records expire after 7 days. */
export const CONVERSION_TTL_SECONDS = 7 * 24 * 60 * 60;

/** The passphrase as stored: lowercase sha256 hex of its UTF-8 bytes. */
export function hashPassphrase(passphrase: string): string {
  return createHash("sha256").update(passphrase, "utf8").digest("hex");
}

export interface KeySchema {
  readonly prefix: string;
  /** Key of a passphrase record, from the passphrase's sha256 hex. */
  passphrase(sha256Hex: string): string;
  /** SCAN pattern matching every passphrase record under this prefix. */
  passphrasePattern(): string;
  whiteboard(project: string): string;
  pstnMute(project: string, channel: string): string;
  pstnEvents(project: string, channel: string): string;
  conversion(taskUuid: string): string;
  /** Wrong-passphrase counter of a caller, from the sha256 hex of its key. */
  guesses(callerSha256Hex: string): string;
}

export function keySchema(prefix: string = DEFAULT_KEY_PREFIX): KeySchema {
  const channelTag = (project: string, channel: string) => `${prefix}chan:{${project}/${channel}}`;
  return {
    prefix,
    passphrase: (sha) => `${prefix}pass:{${sha}}`,
    passphrasePattern: () => `${escapeGlob(prefix)}pass:*`,
    whiteboard: (project) => `${prefix}proj:{${project}}:whiteboard`,
    pstnMute: (project, channel) => `${channelTag(project, channel)}:pstn-mute`,
    pstnEvents: (project, channel) => `${channelTag(project, channel)}:pstn-events`,
    conversion: (uuid) => `${prefix}conv:{${uuid}}`,
    guesses: (sha) => `${prefix}guess:{${sha}}`,
  };
}

/** Why `project` cannot name a new record, or undefined when it can. */
export function checkProjectId(project: string): string | undefined {
  if (project.length === 0) return "project must not be empty";
  if (/[{}/]/.test(project)) return "project must not contain '{', '}' or '/'";
  if (hasControl(project)) return "project must not contain control characters";
  return undefined;
}

/** Why `channel` cannot name a new record, or undefined when it can. */
export function checkChannelId(channel: string): string | undefined {
  if (channel.length === 0) return "channel must not be empty";
  if (/[{}]/.test(channel)) return "channel must not contain '{' or '}'";
  if (hasControl(channel)) return "channel must not contain control characters";
  return undefined;
}

function hasControl(value: string): boolean {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: that is the point
  return /[\u0000-\u001f\u007f]/.test(value);
}

/** A prefix is used literally inside a SCAN MATCH glob. */
function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}
