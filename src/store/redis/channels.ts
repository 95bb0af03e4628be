/**
 * The Redis store's raw channel-directory operations: one command or script
 * each, on keys of one slot, so all of them work on a Cluster (the order of
 * the steps lives in src/store/channels/steps.ts). The writes a caller is told
 * about are acknowledged writes (`calls.write`: with REDIS_MIN_REPLICAS, on
 * that many replicas too). Nothing here SCANs except `scan`, which only the
 * repairs (src/store/channels/repair.ts) use.
 */
import { Cluster } from "ioredis";
import { Failure } from "../../services/failure.js";
import type { PassphraseRecord } from "../../services/ports.js";
import type { ChannelPrimitives, ClaimResult } from "../channels/primitives.js";
import type { Fields } from "../schema/channel-records.js";
import { ADMIN_EVENTS_MAXLEN, type KeySchema } from "../schema/keys.js";
import { orIfWrongType, type RedisCalls } from "./calls.js";
import { defineChannelScripts } from "./channel-scripts.js";
import { perConnection } from "./cluster-connections.js";
import type { RedisClient } from "./connection.js";
import type { ScriptCommands } from "./scripts.js";

const channelScriptsOn = perConnection(defineChannelScripts);

export class RedisChannels implements ChannelPrimitives {
  constructor(
    private readonly calls: RedisCalls,
    private readonly keys: KeySchema,
    /** The store's scripts on a connection (a Cluster node's own, for a write with WAIT). */
    private readonly scriptsOn: (client: RedisClient) => ScriptCommands,
  ) {}

  async writeRecord(
    project: string,
    channel: string,
    mode: "create" | "update",
    fields: Fields,
    expireAt: number | undefined,
  ): Promise<boolean> {
    const key = this.keys.channelRecord(project, channel);
    const pairs = Object.entries(fields).flat();
    const reply = await this.calls.write("writeChannelRecord", key, (c) =>
      channelScriptsOn(c).blChannelRecord(key, mode, expireAt === undefined ? "" : String(expireAt), ...pairs),
    );
    return reply === 1;
  }

  async dropRecordFields(project: string, channel: string, fields: readonly string[]): Promise<void> {
    if (fields.length === 0) return;
    const key = this.keys.channelRecord(project, channel);
    await this.calls.write("dropChannelFields", key, (c) => c.hdel(key, ...fields));
  }

  readRecord(project: string, channel: string): Promise<Fields> {
    return this.calls.readHash("readChannelRecord", this.keys.channelRecord(project, channel));
  }

  async index(project: string, channel: string): Promise<void> {
    const key = this.keys.channelIndex(project);
    await this.calls.write("indexChannel", key, (c) => c.zadd(key, 0, channel));
  }

  async unindex(project: string, channel: string): Promise<void> {
    const key = this.keys.channelIndex(project);
    await this.calls.write("unindexChannel", key, (c) => c.zrem(key, channel));
  }

  indexPage(project: string, after: string | undefined, limit: number): Promise<string[]> {
    const key = this.keys.channelIndex(project);
    const from = after === undefined ? "-" : `(${after}`;
    return this.calls.call("listChannels", (c) =>
      c.zrangebylex(key, from, "+", "LIMIT", 0, limit).catch(orIfWrongType<string[]>([])),
    );
  }

  async claimPassphrase(
    sha: string,
    record: PassphraseRecord,
    expireAt: number | undefined,
    keyId?: string,
  ): Promise<ClaimResult> {
    const recordKey = this.keys.passphraseByHash(sha);
    const expiry = expireAt === undefined ? "" : String(expireAt);
    const key = keyId === undefined ? [] : [keyId];
    const reply = await this.calls.write("claimPassphrase", recordKey, (c) =>
      this.scriptsOn(c).blClaimPassphrase(recordKey, record.project, record.channel, record.role, expiry, ...key),
    );
    if (reply[0] === 0) return { claimed: false, owner: { project: reply[1], channel: reply[2] } };
    return { claimed: true, created: reply[0] === 1 };
  }

  async releasePassphrase(sha: string, project: string, channel: string): Promise<boolean> {
    const key = this.keys.passphraseByHash(sha);
    const reply = await this.calls.write("releasePassphrase", key, (c) =>
      channelScriptsOn(c).blReleasePassphrase(key, project, channel),
    );
    return reply === 1;
  }

  readPassphrase(sha: string): Promise<Fields> {
    return this.calls.readHash("readPassphrase", this.keys.passphraseByHash(sha));
  }

  async removeChannelData(project: string, channel: string, withRecord: boolean): Promise<number> {
    const data = this.keys.channelDataKeys(project, channel);
    const record = this.keys.channelRecord(project, channel);
    // One slot (the channel's tag): one MULTI, so the data and the hash go together.
    return this.calls.write("removeChannelData", record, async (c) => {
      const batch = c.multi().unlink(...data);
      if (withRecord) batch.unlink(record);
      const replies = await batch.exec();
      if (replies === null) throw new Error("transaction aborted");
      for (const [error] of replies) if (error) throw error;
      return Number(replies[0]?.[1] ?? 0);
    });
  }

  async appendAdminEvent(project: string, fields: Fields): Promise<void> {
    const key = this.keys.adminEvents(project);
    const pairs = Object.entries(fields).flat();
    await this.calls.write("appendAdminEvent", key, (c) =>
      c.xadd(key, "MAXLEN", "~", ADMIN_EVENTS_MAXLEN, "*", ...pairs),
    );
  }

  readWhiteboardRecord(project: string): Promise<Fields> {
    return this.calls.readHash("readWhiteboardRecord", this.keys.whiteboard(project));
  }

  /**
   * SCAN over every master in turn: the cursor is `<master>:<node cursor>`,
   * masters in `host:port` order, so a resumed pass continues where it was
   * while the cluster's masters stay the same.
   */
  async scan(pattern: string, cursor: string, count: number): Promise<{ cursor: string; keys: string[] }> {
    const client = this.calls.client;
    const masters =
      client instanceof Cluster
        ? client.nodes("master").sort((a, b) => nodeName(a).localeCompare(nodeName(b)))
        : [client];
    const [at, nodeCursor] = cursor === "0" ? [0, "0"] : parseCursor(cursor);
    const node = masters[at];
    if (node === undefined) return { cursor: "0", keys: [] };
    const [next, keys] = await this.calls.call("scan", () => node.scan(nodeCursor, "MATCH", pattern, "COUNT", count));
    if (next !== "0") return { cursor: `${at}:${next}`, keys };
    return { cursor: at + 1 < masters.length ? `${at + 1}:0` : "0", keys };
  }
}

function nodeName(node: { options: { host?: string | undefined; port?: number | undefined } }): string {
  return `${node.options.host}:${String(node.options.port).padStart(5, "0")}`;
}

function parseCursor(cursor: string): [number, string] {
  const match = /^(\d+):(\d+)$/.exec(cursor);
  if (match === null) throw new Failure("invalid", { detail: `not a channel scan cursor: ${cursor}` });
  return [Number(match[1]), match[2] as string];
}
