/**
 * Input checks of the admin functions, made once for both stores by the admin
 * front (src/store/checked-admin.ts), so the CLI gets the same answer from either. They
 * throw `Failure("invalid")` with a detail the operator can act on.
 */
import { Failure } from "../../services/failure.js";
import type { PassphraseRecord, WhiteboardSettings } from "../../services/ports.js";
import { checkChannelId, checkProjectId } from "./keys.js";
import { checkWhiteboard } from "./channel-records.js";

export interface CreateChannelInput {
  project: string;
  channel: string;
  hostPassphrase: string;
  attendeePassphrase?: string;
}

/** The passphrase length the API accepts (`max_len` in the proto files); a longer one could never be used. */
const MAX_PASSPHRASE_LENGTH = 256;

export const DEFAULT_EVENT_COUNT = 20;
const MAX_EVENT_COUNT = 10_000;

/** One passphrase `createChannel` asks for (in clear; the key schema hashes it) and its record. */
export interface ChannelPassphrase {
  readonly passphrase: string;
  readonly record: PassphraseRecord;
}

/** The passphrase records a valid `createChannel` input asks for. */
export function channelPassphrases(input: CreateChannelInput): ChannelPassphrase[] {
  invalidIf(checkProjectId(input.project) ?? checkChannelId(input.channel));
  const { project, channel, hostPassphrase, attendeePassphrase } = input;
  invalidIf(checkPassphrase("host", hostPassphrase));
  const wanted: ChannelPassphrase[] = [{ passphrase: hostPassphrase, record: { project, channel, role: "host" } }];
  if (attendeePassphrase !== undefined) {
    invalidIf(checkPassphrase("attendee", attendeePassphrase));
    // One passphrase cannot carry two roles: the record has a single `role`.
    if (attendeePassphrase === hostPassphrase) invalidIf("attendee passphrase must differ from the host passphrase");
    wanted.push({ passphrase: attendeePassphrase, record: { project, channel, role: "attendee" } });
  }
  return wanted;
}

/** The refusal when a passphrase already opens another channel. */
export function passphraseConflict(role: string, owner: { project: string; channel: string }): Failure {
  // The operator is trusted (they hold the Redis credentials anyway), and needs
  // to know which channel to delete or which passphrase to change.
  return new Failure("invalid", {
    detail: `${role} passphrase is already used by channel ${owner.channel} of project ${owner.project}`,
  });
}

export function checkProject(project: string): void {
  invalidIf(checkProjectId(project));
}

/** Reads and deletes are checked too: an id the key schema cannot hold would name another channel's keys. */
export function checkChannel(project: string, channel: string): void {
  invalidIf(checkProjectId(project) ?? checkChannelId(channel));
}

export function checkSettings(settings: WhiteboardSettings): void {
  invalidIf(checkWhiteboard(settings));
}

export function eventCount(count: number | undefined): number {
  if (count === undefined) return DEFAULT_EVENT_COUNT;
  if (!Number.isInteger(count) || count < 1 || count > MAX_EVENT_COUNT) {
    invalidIf(`count must be an integer from 1 to ${MAX_EVENT_COUNT}`);
  }
  return count;
}

function checkPassphrase(role: string, passphrase: string): string | undefined {
  if (passphrase.length === 0) return `${role} passphrase must not be empty`;
  // Counted in code points, as protovalidate's max_len does.
  if ([...passphrase].length > MAX_PASSPHRASE_LENGTH)
    return `${role} passphrase must be at most ${MAX_PASSPHRASE_LENGTH} characters`;
  return undefined;
}

function invalidIf(problem: string | undefined): void {
  if (problem !== undefined) throw new Failure("invalid", { detail: problem });
}
