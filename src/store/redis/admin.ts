/**
 * The Redis store's raw admin writes and reads (channels: src/store/channels/replace-passphrases.ts
 * over the directory's primitives, src/store/redis/channels.ts). The admin front
 * (src/store/checked-admin.ts) checks the input before calling these. Every key is
 * addressed on its own (or with keys of the same hash tag), so all of this
 * works on a Cluster too. The writes the CLI reports as done are acknowledged
 * writes (`calls.write`: with REDIS_MIN_REPLICAS, on that many replicas too).
 */
import type { KeyRing } from "../../secrets/key-ring.js";
import type { ChangedBy, MuteEvent, WhiteboardEvent, WhiteboardSettings } from "../../services/ports.js";
import type { AdminPrimitives } from "../checked-admin.js";
import type { KeySchema } from "../schema/keys.js";
import { parseWhiteboardEvent } from "../schema/conversion-records.js";
import { parseStreamEvent } from "../schema/line-records.js";
import {
  type Fields,
  pairsToFields,
  parseMuteState,
  sealWhiteboardFields,
  whiteboardFields,
} from "../schema/channel-records.js";
import { execAll, orIfWrongType, type RedisCalls } from "./calls.js";
import { defineWhiteboardScripts } from "./whiteboard-scripts.js";
import { perConnection } from "./cluster-connections.js";

const whiteboardScriptsOn = perConnection(defineWhiteboardScripts);

export class RedisAdmin implements AdminPrimitives {
  constructor(
    private readonly calls: RedisCalls,
    private readonly keys: KeySchema,
    private readonly secretsKeys: KeyRing,
  ) {}

  async deleteChannel(project: string, channel: string, passKeys: readonly string[]): Promise<number> {
    // One key per command: in a Cluster the passphrase records live in many slots.
    const muteKey = this.keys.pstnMute(project, channel);
    const counts = await Promise.all([
      ...passKeys.map((k) => this.calls.write("deleteChannel", k, (c) => c.unlink(k))),
      // Same hash tag, same slot: one command is fine here.
      this.calls.write("deleteChannel", muteKey, (c) => c.unlink(...this.keys.channelDataKeys(project, channel))),
    ]);
    return counts.reduce((sum, n) => sum + n, 0);
  }

  async writeWhiteboard(project: string, settings: WhiteboardSettings, changed: ChangedBy | undefined): Promise<void> {
    const key = this.keys.whiteboard(project);
    const { set, remove } = whiteboardFields(settings, changed);
    const sealed = sealWhiteboardFields(this.secretsKeys, project, set);
    await this.calls.write("setWhiteboard", key, (c) =>
      execAll(
        c
          .multi()
          .hdel(key, ...remove)
          .hset(key, sealed),
      ),
    );
  }

  async replaceWhiteboardFields(project: string, expected: Fields, replacement: Fields): Promise<boolean> {
    const key = this.keys.whiteboard(project);
    const triples = Object.entries(replacement).flatMap(([field, value]) => [field, expected[field] ?? "", value]);
    const reply = await this.calls.write("resealWhiteboard", key, (c) =>
      whiteboardScriptsOn(c).blReplaceHashFields(key, ...triples),
    );
    return reply === 1;
  }

  async clearWhiteboard(project: string): Promise<void> {
    const key = this.keys.whiteboard(project);
    await this.calls.write("clearWhiteboard", key, (c) => c.unlink(key));
  }

  async getMuteState(project: string, channel: string): Promise<Record<string, boolean>> {
    return parseMuteState(await this.calls.readHash("getMuteState", this.keys.pstnMute(project, channel)));
  }

  async readMuteEvents(project: string, channel: string, count: number): Promise<MuteEvent[]> {
    const entries = await this.newestEntries("getMuteEvents", this.keys.pstnEvents(project, channel), count);
    return entries.flatMap(({ id, fields }) => parseStreamEvent(id, fields) ?? []);
  }

  async readWhiteboardEvents(project: string, channel: string, count: number): Promise<WhiteboardEvent[]> {
    const key = this.keys.whiteboardEvents(project, channel);
    const entries = await this.newestEntries("getWhiteboardEvents", key, count);
    return entries.flatMap(({ id, fields }) => parseWhiteboardEvent(id, fields) ?? []);
  }

  /** XREVRANGE + - COUNT n: the newest n entries of a stream, newest first; a key of another type reads as empty. */
  private async newestEntries(
    operation: string,
    key: string,
    count: number,
  ): Promise<{ id: string; fields: Fields }[]> {
    const entries = await this.calls.call(operation, (c) =>
      c.xrevrange(key, "+", "-", "COUNT", count).catch(orIfWrongType<[string, string[]][]>([])),
    );
    return entries.map(([id, pairs]) => ({ id, fields: pairsToFields(pairs) }));
  }
}
