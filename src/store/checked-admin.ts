/**
 * The admin functions (operator CLI, demo, tests) of both stores, in one place:
 * each checks its input here (admin-checks.ts), then calls the store's own raw
 * admin write or read. The CLI thus gets the same answer from either store, and
 * a store's raw operations only ever see checked input.
 */
import type {
  AdminStore,
  ChangedBy,
  ChannelDoctorReport,
  MuteEvent,
  ReindexOptions,
  ReindexReport,
  ResealReport,
  Store,
  WhiteboardEvent,
  WhiteboardSettings,
} from "../services/ports.js";
import type { KeyRing } from "../secrets/key-ring.js";
import { replaceChannelPassphrases } from "./channels/replace-passphrases.js";
import { ChannelRepair } from "./channels/repair.js";
import { unindexedPassphrases } from "./channels/scan.js";
import type { ChannelSteps } from "./channels/steps.js";
import type { KeySchema } from "./schema/keys.js";
import type { Fields } from "./schema/channel-records.js";
import { resealWhiteboards } from "./whiteboard-reseal.js";
import {
  type CreateChannelInput,
  channelPassphrases,
  checkChannel,
  checkProject,
  checkSettings,
  eventCount,
} from "./schema/admin-checks.js";

/** What each store does for the admin functions, given checked input. */
export interface AdminPrimitives {
  /**
   * Deletes a channel no index knows yet (written by another writer, or by the
   * CLI before the indexes): the given passphrase records (found by SCAN), its
   * mute and meta hashes, its streams. Returns how many keys went.
   */
  deleteChannel(project: string, channel: string, passphraseKeys: readonly string[]): Promise<number>;
  /** Writes the settings, their secrets sealed under the current SECRETS_KEYS key. */
  writeWhiteboard(project: string, settings: WhiteboardSettings, changed: ChangedBy | undefined): Promise<void>;
  /**
   * In one step: sets each field of `replacement` only when every one of them
   * still holds its value in `expected`. True when written.
   */
  replaceWhiteboardFields(project: string, expected: Fields, replacement: Fields): Promise<boolean>;
  clearWhiteboard(project: string): Promise<void>;
  getMuteState(project: string, channel: string): Promise<Record<string, boolean>>;
  /** The newest `count` events, newest first; malformed entries skipped. */
  readMuteEvents(project: string, channel: string, count: number): Promise<MuteEvent[]>;
  /** The newest `count` whiteboard events, newest first; malformed entries skipped. */
  readWhiteboardEvents(project: string, channel: string, count: number): Promise<WhiteboardEvent[]>;
}

/** The admin functions of `AdminStore`, beyond the request path's `Store`. */
export type AdminOperations = Omit<AdminStore, keyof Store>;

/** Base of both stores: the checked admin functions over the store's `primitives`. */
export abstract class CheckedAdmin implements AdminOperations {
  protected abstract readonly primitives: AdminPrimitives;
  abstract readonly channels: ChannelSteps;
  abstract readonly keys: KeySchema;
  /** SECRETS_KEYS: what the whiteboard record's secrets are sealed under. */
  protected abstract readonly secretsKeys: KeyRing;

  /**
   * Creates the channel or changes its passphrases: afterwards exactly the given
   * passphrases open it, and the channel is indexed (src/store/channels/replace-passphrases.ts). A
   * passphrase that already opens another channel is refused (`invalid`,
   * naming that channel).
   */
  async createChannel(input: CreateChannelInput): Promise<void> {
    const passphrases = channelPassphrases(input);
    const { project, channel } = input;
    const unindexed = () => unindexedPassphrases(this.channels.primitives, this.keys, project, channel);
    await replaceChannelPassphrases(this.channels, project, channel, passphrases, unindexed, this.channels.now());
  }

  /** An indexed channel goes through the directory (no SCAN); one no index knows yet, by SCAN. */
  async deleteChannel(project: string, channel: string): Promise<number> {
    checkChannel(project, channel);
    const removed = await this.channels.removeCounting(project, channel);
    if (removed !== undefined) return removed;
    const shas = await unindexedPassphrases(this.channels.primitives, this.keys, project, channel);
    return this.primitives.deleteChannel(
      project,
      channel,
      shas.map((sha) => this.keys.passphraseByHash(sha)),
    );
  }

  async setWhiteboard(project: string, settings: WhiteboardSettings, changed?: ChangedBy): Promise<void> {
    checkProject(project);
    checkSettings(settings);
    await this.primitives.writeWhiteboard(project, settings, changed);
  }

  async channelDoctor(project?: string, options: { graceMs?: number } = {}): Promise<ChannelDoctorReport> {
    if (project !== undefined) checkProject(project);
    return new ChannelRepair(this.channels, this.keys).doctor(project, options.graceMs);
  }

  reindexChannels(options?: ReindexOptions): Promise<ReindexReport> {
    return new ChannelRepair(this.channels, this.keys).reindex(options);
  }

  resealWhiteboards(options?: ReindexOptions): Promise<ResealReport> {
    return resealWhiteboards(
      { channels: this.channels.primitives, admin: this.primitives, keys: this.keys, ring: this.secretsKeys },
      options,
    );
  }

  async clearWhiteboard(project: string): Promise<void> {
    checkProject(project);
    return this.primitives.clearWhiteboard(project);
  }

  async getMuteState(project: string, channel: string): Promise<Record<string, boolean>> {
    checkChannel(project, channel);
    return this.primitives.getMuteState(project, channel);
  }

  async getMuteEvents(project: string, channel: string, count?: number): Promise<MuteEvent[]> {
    checkChannel(project, channel);
    const n = eventCount(count);
    return this.primitives.readMuteEvents(project, channel, n);
  }

  async getWhiteboardEvents(project: string, channel: string, count?: number): Promise<WhiteboardEvent[]> {
    checkChannel(project, channel);
    const n = eventCount(count);
    return this.primitives.readWhiteboardEvents(project, channel, n);
  }
}
