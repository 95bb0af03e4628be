/**
 * The in-memory store's raw admin writes and reads, over its key space. The
 * admin front (src/store/checked-admin.ts) checks the input before calling these.
 */
import type { MuteEvent, WhiteboardEvent, WhiteboardSettings } from "../../services/ports.js";
import { type ChannelPassphrase, passphraseConflict } from "../schema/admin-checks.js";
import type { AdminPrimitives, WhiteboardStamp } from "../checked-admin.js";
import type { KeySchema } from "../schema/keys.js";
import type { MemoryKeyspace, StreamEntry } from "./keyspace.js";
import { parseWhiteboardEvent } from "../schema/conversion-records.js";
import { parseMuteEvent, parseMuteState, passphraseFields, whiteboardFields } from "../schema/channel-records.js";

export class MemoryAdmin implements AdminPrimitives {
  /** `guard` throws `Failure("unavailable")` while the store is unavailable or closed. */
  constructor(
    private readonly data: MemoryKeyspace,
    private readonly keys: KeySchema,
    private readonly guard: () => void,
  ) {}

  async writeChannel(project: string, channel: string, passphrases: readonly ChannelPassphrase[]): Promise<void> {
    this.guard();
    const keep = new Set<string>();
    for (const { passphrase, record } of passphrases) {
      const key = this.keys.passphrase(passphrase);
      const existing = this.data.hashFields(key);
      if (
        existing.project !== undefined &&
        (existing.project !== record.project || existing.channel !== record.channel)
      ) {
        throw passphraseConflict(record.role, { project: existing.project, channel: existing.channel ?? "" });
      }
      keep.add(key);
    }
    for (const { passphrase, record } of passphrases) {
      this.data.set(this.keys.passphrase(passphrase), {
        type: "hash",
        fields: new Map(Object.entries(passphraseFields(record))),
      });
    }
    // The channel ends up opened by exactly the given passphrases (rotation).
    for (const key of this.channelPassphraseKeys(project, channel)) {
      if (!keep.has(key)) this.data.delete(key);
    }
  }

  async deleteChannel(project: string, channel: string): Promise<number> {
    this.guard();
    let deleted = 0;
    const keys = [
      ...this.channelPassphraseKeys(project, channel),
      this.keys.pstnMute(project, channel),
      this.keys.pstnEvents(project, channel),
      this.keys.pstnMuteMeta(project, channel),
      this.keys.whiteboardEvents(project, channel),
    ];
    for (const key of keys) {
      if (this.data.get(key) && this.data.delete(key)) deleted++;
    }
    return deleted;
  }

  async writeWhiteboard(project: string, settings: WhiteboardSettings, stamp?: WhiteboardStamp): Promise<void> {
    this.guard();
    const hash = this.data.writableHash(this.keys.whiteboard(project));
    const { set, remove } = whiteboardFields(settings, stamp);
    for (const field of remove) hash.delete(field);
    for (const [field, value] of Object.entries(set)) hash.set(field, value);
  }

  async clearWhiteboard(project: string): Promise<void> {
    this.guard();
    this.data.delete(this.keys.whiteboard(project));
  }

  async getMuteState(project: string, channel: string): Promise<Record<string, boolean>> {
    this.guard();
    return parseMuteState(this.data.hashFields(this.keys.pstnMute(project, channel)));
  }

  async readMuteEvents(project: string, channel: string, count: number): Promise<MuteEvent[]> {
    this.guard();
    const entries = this.newestEntries(this.keys.pstnEvents(project, channel), count);
    return entries.flatMap((entry) => parseMuteEvent(entry.id, entry.fields) ?? []);
  }

  async readWhiteboardEvents(project: string, channel: string, count: number): Promise<WhiteboardEvent[]> {
    this.guard();
    const entries = this.newestEntries(this.keys.whiteboardEvents(project, channel), count);
    return entries.flatMap((entry) => parseWhiteboardEvent(entry.id, entry.fields) ?? []);
  }

  /** Like XREVRANGE + - COUNT n: the newest n entries of a stream, newest first. */
  private newestEntries(key: string, count: number): StreamEntry[] {
    const stream = this.data.get(key);
    return stream?.type === "stream" ? stream.entries.slice(-count).reverse() : [];
  }

  /** Keys of the passphrase records of one channel (what the Redis store finds by SCAN). */
  private channelPassphraseKeys(project: string, channel: string): string[] {
    const prefix = `${this.keys.prefix}pass:`; // what the Redis store's SCAN pattern matches
    const keys: string[] = [];
    for (const key of this.data.keys()) {
      if (!key.startsWith(prefix)) continue;
      const record = this.data.hashFields(key);
      if (record.project === project && record.channel === channel) keys.push(key);
    }
    return keys;
  }
}
