/**
 * The channel directory of both stores (`Store.channels`), in one place: the
 * order of its steps over each store's raw operations (src/store/channels/primitives.ts)
 * is what keeps the indexes honest on a Cluster, where the project's index,
 * the channel's hash and each passphrase record live in different slots:
 *
 * - create: the channel hash first (written only when absent — that one step
 *   decides which of concurrent creates of one id wins; it carries the
 *   passphrase hashes and `pending`), then the project's index, then the
 *   passphrase records, then `pending` goes;
 * - rotate: the new hash joins the channel hash, then its record is claimed,
 *   then the old records go, then their hashes;
 * - remove: `pending` marks the hash, the passphrase records go, then the
 *   mute state, meta, both streams and the hash in one step, then the index.
 *
 * So a passphrase record is only ever written while its channel hash lists it
 * and the index holds the channel, and goes before either: a crash leaves at
 * worst a listed channel that does not open, or a half-written channel whose
 * `pending` tells the doctor (src/store/channels/repair.ts) what to finish or undo.
 */
import type {
  AdminEvent,
  ChannelDirectory,
  ChannelInfo,
  ChannelPage,
  CreateOutcome,
  NewChannel,
  PassphraseRecord,
  PassphraseRole,
  RotateOutcome,
  WhiteboardInfo,
  WhiteboardEvent,
  WhiteboardSettings,
  ChangedBy,
} from "../../services/ports.js";
import { Failure } from "../../services/failure.js";
import type { ChannelPrimitives } from "./primitives.js";
import { checkWhiteboard, parseMillis } from "../schema/channel-records.js";
import {
  adminEventFields,
  listedPassphrases,
  newChannelFields,
  PENDING_FIELD,
  parseChannelInfo,
  parsePending,
  passField,
  pendingValue,
  parseWhiteboardInfo,
} from "../schema/channel-index-records.js";
import { checkProjectId, type KeySchema } from "../schema/keys.js";

/** Index reads per `list` call when channels of a page turn out to be gone (expired, half-written). */
const MAX_LIST_ROUNDS = 4;

/**
 * The store's own whiteboard writes and reads (part of its AdminPrimitives,
 * spelled out here so this file does not import checked-admin.ts, which
 * imports it), which the directory's whiteboard calls use.
 */
export interface WhiteboardPrimitives {
  writeWhiteboard(project: string, settings: WhiteboardSettings, changed: ChangedBy | undefined): Promise<void>;
  clearWhiteboard(project: string): Promise<void>;
  /** The newest `count` whiteboard events, newest first. */
  readWhiteboardEvents(project: string, channel: string, count: number): Promise<WhiteboardEvent[]>;
}

export class ChannelSteps implements ChannelDirectory {
  /** `now`: the store's clock (ms since the epoch), for the `pending` marks the doctor ages. */
  constructor(
    readonly primitives: ChannelPrimitives,
    readonly whiteboards: WhiteboardPrimitives,
    readonly keys: KeySchema,
    readonly now: () => number = Date.now,
  ) {}

  /** A project's passphrase as its record's key and the channel hash carry it: its digest under the current key. */
  digest(project: string, passphrase: string): string {
    return this.keys.passphraseDigestOf(project, passphrase);
  }

  /** The id of the key new passphrase records are written under. */
  get keyId(): string {
    return this.keys.passphraseKeys.current.id;
  }

  async create(input: NewChannel): Promise<CreateOutcome> {
    const { project, channel, expireAt } = input;
    const passphrases = input.passphrases.map((p) => ({ role: p.role, sha: this.digest(project, p.passphrase) }));
    // One record has one role: a passphrase given for two roles would open the channel as only one.
    const twice = passphrases.find((p, i) => passphrases.findIndex((q) => q.sha === p.sha) !== i);
    if (twice !== undefined) return { kind: "passphrase_taken", role: twice.role };
    const fields = newChannelFields({ ...input, passphrases, pendingSince: this.now() });
    if (!(await this.primitives.writeRecord(project, channel, "create", fields, expireAt))) return { kind: "exists" };
    await this.primitives.index(project, channel);
    for (const { role, sha } of passphrases) {
      const claim = await this.primitives.claimPassphrase(sha, { project, channel, role }, expireAt, this.keyId);
      if (!claim.claimed) {
        await this.removeSteps(project, channel, passphrases);
        return { kind: "passphrase_taken", role };
      }
    }
    await this.primitives.dropRecordFields(project, channel, [PENDING_FIELD]);
    return { kind: "created" };
  }

  async get(project: string, channel: string): Promise<ChannelInfo | undefined> {
    return parseChannelInfo(project, channel, await this.primitives.readRecord(project, channel));
  }

  /**
   * Pages the index by id. Members whose hash is gone (expired, or left by an
   * interrupted write) are skipped, not removed: removing one here could race
   * a create that is writing it (the doctor removes them, re-checking).
   */
  async list(project: string, limit: number, after: string | undefined): Promise<ChannelPage> {
    const channels: ChannelInfo[] = [];
    let cursor = after;
    for (let round = 0; round < MAX_LIST_ROUNDS && channels.length < limit; round++) {
      const want = limit - channels.length;
      const ids = await this.primitives.indexPage(project, cursor, want);
      const infos = await Promise.all(ids.map((id) => this.get(project, id)));
      for (const info of infos) if (info !== undefined) channels.push(info);
      if (ids.length < want) return { channels, next: undefined };
      cursor = ids.at(-1);
    }
    return { channels, next: cursor };
  }

  /**
   * Two rotations of one role at the same time both succeed and leave both new
   * passphrases opening the channel (each releases only the passphrases it
   * read before): never none, and both are listed, so a third rotation or a
   * remove revokes them.
   */
  async rotate(project: string, channel: string, role: PassphraseRole, passphrase: string): Promise<RotateOutcome> {
    const fields = await this.primitives.readRecord(project, channel);
    if (parseChannelInfo(project, channel, fields) === undefined) return { kind: "unknown" };
    const listed = listedPassphrases(fields);
    const old = listed.filter((p) => p.role === role).map((p) => p.sha);
    if (old.length === 0) return { kind: "unknown" };
    const sha = this.digest(project, passphrase);
    // Already one of this channel's passphrases (of any role): it "already opens a channel".
    if (listed.some((p) => p.sha === sha)) return { kind: "passphrase_taken" };
    const expireAt = parseMillis(fields.expire_at);
    const marked = { [passField(sha)]: role, [PENDING_FIELD]: pendingValue("rotate", this.now(), sha) };
    if (!(await this.primitives.writeRecord(project, channel, "update", marked, undefined))) return { kind: "unknown" };
    const claim = await this.primitives.claimPassphrase(sha, { project, channel, role }, expireAt, this.keyId);
    if (!claim.claimed) {
      await this.primitives.dropRecordFields(project, channel, [passField(sha), PENDING_FIELD]);
      return { kind: "passphrase_taken" };
    }
    await Promise.all(old.map((o) => this.primitives.releasePassphrase(o, project, channel)));
    await this.primitives.dropRecordFields(project, channel, [...old.map(passField), PENDING_FIELD]);
    return { kind: "rotated" };
  }

  async remove(project: string, channel: string): Promise<boolean> {
    return (await this.removeCounting(project, channel)) !== undefined;
  }

  /**
   * `remove`, answering how many keys of the channel went (passphrase records,
   * mute and meta hashes, streams; not its index entries), or undefined when
   * the project has no such channel.
   */
  async removeCounting(project: string, channel: string): Promise<number | undefined> {
    const fields = await this.primitives.readRecord(project, channel);
    if (parseChannelInfo(project, channel, fields) === undefined) return undefined;
    const marked = { [PENDING_FIELD]: pendingValue("delete", this.now()) };
    if (!(await this.primitives.writeRecord(project, channel, "update", marked, undefined))) return undefined;
    return this.removeSteps(project, channel, listedPassphrases(fields));
  }

  /**
   * Moves a passphrase record found under an older key (or under the bare
   * sha256 of a record written before keys) to the current key's digest `to`,
   * in a rotation's order: `to` joins the channel hash, its record is claimed,
   * then `from` goes. Nothing when the channel no longer lists `from`; undone
   * when a rotation or removal took `from` away meanwhile, so a passphrase
   * rotated away never comes back under its new digest. True when moved.
   */
  async rekey(record: PassphraseRecord, from: string, to: string): Promise<boolean> {
    const { project, channel, role } = record;
    const p = this.primitives;
    const listedFrom = async () => (await p.readRecord(project, channel))[passField(from)] === role;
    if (from === to || !(await listedFrom())) return false;
    if (!(await p.writeRecord(project, channel, "update", { [passField(to)]: role }, undefined))) return false;
    const claim = await p.claimPassphrase(to, { project, channel, role }, record.expireAt, this.keyId);
    if (!claim.claimed || !(await listedFrom())) {
      if (claim.claimed) await p.releasePassphrase(to, project, channel);
      await p.dropRecordFields(project, channel, [passField(to)]);
      return false;
    }
    await p.releasePassphrase(from, project, channel);
    await p.dropRecordFields(project, channel, [passField(from)]);
    return true;
  }

  /** The steps of a removal (also the undo of a create): records, then data and hash, then index. */
  async removeSteps(project: string, channel: string, passphrases: ReadonlyArray<{ sha: string }>): Promise<number> {
    const released = await Promise.all(
      passphrases.map((p) => this.primitives.releasePassphrase(p.sha, project, channel)),
    );
    const data = await this.primitives.removeChannelData(project, channel, true);
    await this.primitives.unindex(project, channel);
    return released.filter(Boolean).length + data;
  }

  async audit(project: string, event: AdminEvent): Promise<void> {
    await this.primitives.appendAdminEvent(project, adminEventFields(event));
  }

  async whiteboardInfo(project: string): Promise<WhiteboardInfo | undefined> {
    return parseWhiteboardInfo(await this.primitives.readWhiteboardRecord(project));
  }

  async setWhiteboard(project: string, settings: WhiteboardSettings, by: string, at: number): Promise<void> {
    const problem = checkProjectId(project) ?? checkWhiteboard(settings);
    if (problem !== undefined) throw new Failure("invalid", { detail: problem });
    await this.whiteboards.writeWhiteboard(project, settings, { by, at });
  }

  clearWhiteboard(project: string): Promise<void> {
    return this.whiteboards.clearWhiteboard(project);
  }

  async newestWhiteboardEventId(project: string, channel: string): Promise<string> {
    const [newest] = await this.whiteboards.readWhiteboardEvents(project, channel, 1);
    return newest?.id ?? "0-0";
  }

  /** How old a `pending` mark is; Infinity for a channel without one. */
  pendingAge(value: string | undefined): number {
    const pending = parsePending(value);
    return pending === undefined ? Number.POSITIVE_INFINITY : this.now() - pending.since;
  }
}
