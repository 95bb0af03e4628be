/**
 * The Redis store's `PstnEventLog`: a channel's mute events after a position,
 * read with one script per read (the clock, what XINFO says about removed
 * entries and the entries, consistent with each other), and the notifications
 * the mute script publishes (src/store/redis/notifications.ts).
 */
import type { ChannelRef, PstnEventLog, PstnEventPage } from "../../services/ports.js";
import type { KeySchema } from "../schema/keys.js";
import { EMPTY_STREAM, pstnEventPage, type StreamRead } from "../schema/pstn-event-page.js";
import { pairsToFields } from "../schema/channel-records.js";
import type { RedisCalls } from "./calls.js";
import type { RedisClient } from "./connection.js";
import type { RedisNotifications } from "./notifications.js";

/**
 * KEYS: event stream. ARGV: position (exclusive) or `$` (the tail only: no
 * entries), count. Answers {TIME sec, usec} for a missing stream, else also
 * last-generated-id, max-deleted-entry-id, entries-added, length, the oldest
 * entry's id ('' when empty) and the entries. Needs Redis 7.0 (XINFO fields).
 */
const READ_PSTN_EVENTS = `
local t = redis.call('TIME')
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'none' then return {t[1], t[2]} end
if kind ~= 'stream' then return redis.error_reply('WRONGTYPE pstn events key is not a stream') end
local info = redis.call('XINFO', 'STREAM', KEYS[1])
local f = {}
for i = 1, #info, 2 do f[info[i]] = info[i + 1] end
local first = ''
if type(f['first-entry']) == 'table' then first = f['first-entry'][1] end
local entries = {}
if ARGV[1] ~= '$' then entries = redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], '+', 'COUNT', ARGV[2]) end
return {t[1], t[2], f['last-generated-id'], f['max-deleted-entry-id'], f['entries-added'], f['length'], first, entries}
`;

type ReadReply = [string, string] | [string, string, string, string, number, number, string, [string, string[]][]];

interface ReadScript {
  blReadPstnEvents(key: string, after: string, count: string): Promise<ReadReply>;
}

export class RedisPstnEvents implements PstnEventLog {
  private readonly script: ReadScript;

  constructor(
    client: RedisClient,
    private readonly calls: RedisCalls,
    private readonly keys: KeySchema,
    readonly notifications: RedisNotifications,
  ) {
    client.defineCommand("blReadPstnEvents", { numberOfKeys: 1, lua: READ_PSTN_EVENTS });
    // defineCommand adds a method ioredis' types cannot know about.
    this.script = client as unknown as ReadScript;
  }

  async readEvents(channel: ChannelRef, after: string | undefined, count: number): Promise<PstnEventPage> {
    const key = this.keys.pstnEvents(channel.project, channel.channel);
    const reply = await this.calls.call("readPstnEvents", () =>
      this.script.blReadPstnEvents(key, after ?? "$", String(count)),
    );
    return pstnEventPage(streamRead(reply), after, count);
  }
}

function streamRead(reply: ReadReply): StreamRead {
  const now = Number(reply[0]) * 1000 + Math.floor(Number(reply[1]) / 1000);
  if (reply.length === 2) return { ...EMPTY_STREAM, entries: [], now };
  const [, , lastGeneratedId, maxDeletedId, entriesAdded, length, first, entries] = reply;
  return {
    lastGeneratedId,
    maxDeletedId,
    entriesAdded: Number(entriesAdded),
    length: Number(length),
    firstId: first === "" ? undefined : first,
    entries: entries.map(([id, flat]) => ({ id, fields: pairsToFields(flat) })),
    now,
  };
}
