/**
 * The in-memory store's raw admin writes and reads, over its key space. The
 * admin front (src/store/checked-admin.ts) checks the input before calling these.
 */
import type { KeyRing } from "../../secrets/key-ring.js";
import type { ChangedBy, MuteEvent, WhiteboardEvent, WhiteboardSettings } from "../../services/ports.js";
import type { AdminPrimitives } from "../checked-admin.js";
import type { KeySchema } from "../schema/keys.js";
import type { MemoryKeyspace, StreamEntry } from "./keyspace.js";
import { parseWhiteboardEvent } from "../schema/conversion-records.js";
import { parseStreamEvent } from "../schema/line-records.js";
import { type Fields, parseMuteState, sealWhiteboardFields, whiteboardFields } from "../schema/channel-records.js";

export class MemoryAdmin implements AdminPrimitives {
  /** `guard` throws `Failure("unavailable")` while the store is unavailable or closed. */
  constructor(
    private readonly data: MemoryKeyspace,
    private readonly keys: KeySchema,
    private readonly guard: () => void,
    private readonly secretsKeys: KeyRing,
  ) {}

  async deleteChannel(project: string, channel: string, passphraseKeys: readonly string[]): Promise<number> {
    this.guard();
    let deleted = 0;
    const keys = [...passphraseKeys, ...this.keys.channelDataKeys(project, channel)];
    for (const key of keys) {
      if (this.data.get(key) && this.data.delete(key)) deleted++;
    }
    return deleted;
  }

  async writeWhiteboard(project: string, settings: WhiteboardSettings, changed: ChangedBy | undefined): Promise<void> {
    this.guard();
    const hash = this.data.writableHash(this.keys.whiteboard(project));
    const { set, remove } = whiteboardFields(settings, changed);
    const sealed = sealWhiteboardFields(this.secretsKeys, project, set);
    for (const field of remove) hash.delete(field);
    for (const [field, value] of Object.entries(sealed)) hash.set(field, value);
  }

  async replaceWhiteboardFields(project: string, expected: Fields, replacement: Fields): Promise<boolean> {
    this.guard();
    const entry = this.data.get(this.keys.whiteboard(project));
    if (entry?.type !== "hash") return false;
    const fields = Object.keys(replacement);
    if (fields.some((field) => entry.fields.get(field) !== expected[field])) return false;
    for (const field of fields) entry.fields.set(field, replacement[field] as string);
    return true;
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
    return entries.flatMap((entry) => parseStreamEvent(entry.id, entry.fields) ?? []);
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
}
