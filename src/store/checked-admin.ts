/**
 * The admin functions (operator CLI, demo, tests) of both stores, in one place:
 * each checks its input here (admin-checks.ts), then calls the store's own raw
 * admin write or read. The CLI thus gets the same answer from either store, and
 * a store's raw operations only ever see checked input.
 */
import type { AdminStore, MuteEvent, Store, WhiteboardEvent, WhiteboardSettings } from "../services/ports.js";
import {
  type ChannelPassphrase,
  type CreateChannelInput,
  channelPassphrases,
  checkProject,
  checkSettings,
  eventCount,
} from "./schema/admin-checks.js";

/** Who set a project's whiteboard settings when (ChannelDirectory.setWhiteboard). */
export interface WhiteboardStamp {
  readonly by: string;
  readonly at: number;
}

/** What each store does for the admin functions, given checked input. */
export interface AdminPrimitives {
  /**
   * Afterwards exactly these passphrases open the channel (older ones of this
   * channel are removed). A passphrase that already opens another channel is
   * refused (`passphraseConflict`), leaving nothing behind.
   */
  writeChannel(project: string, channel: string, passphrases: readonly ChannelPassphrase[]): Promise<void>;
  deleteChannel(project: string, channel: string): Promise<number>;
  /**
   * Replaces the settings; with `stamp` (the admin API) records who set them
   * when (`updated_by`, `updated_at`), without it (the CLI's old path, other
   * writers) removes a stamp that would no longer be true.
   */
  writeWhiteboard(project: string, settings: WhiteboardSettings, stamp?: WhiteboardStamp): Promise<void>;
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

  /**
   * Creates the channel or changes its passphrases: afterwards exactly the given
   * passphrases open it. A passphrase that already opens another channel is
   * refused (`invalid`, naming that channel).
   */
  async createChannel(input: CreateChannelInput): Promise<void> {
    const passphrases = channelPassphrases(input);
    await this.primitives.writeChannel(input.project, input.channel, passphrases);
  }

  deleteChannel(project: string, channel: string): Promise<number> {
    return this.primitives.deleteChannel(project, channel);
  }

  async setWhiteboard(project: string, settings: WhiteboardSettings): Promise<void> {
    checkProject(project);
    checkSettings(settings);
    await this.primitives.writeWhiteboard(project, settings);
  }

  clearWhiteboard(project: string): Promise<void> {
    return this.primitives.clearWhiteboard(project);
  }

  getMuteState(project: string, channel: string): Promise<Record<string, boolean>> {
    return this.primitives.getMuteState(project, channel);
  }

  async getMuteEvents(project: string, channel: string, count?: number): Promise<MuteEvent[]> {
    const n = eventCount(count);
    return this.primitives.readMuteEvents(project, channel, n);
  }

  async getWhiteboardEvents(project: string, channel: string, count?: number): Promise<WhiteboardEvent[]> {
    const n = eventCount(count);
    return this.primitives.readWhiteboardEvents(project, channel, n);
  }
}
