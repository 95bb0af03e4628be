/**
 * Lua scripts of the Redis channel directory (src/store/redis/channels.ts),
 * each on one key, so Cluster routes it. Registered per connection like the
 * store's other scripts (a Cluster node's own connection for a write with WAIT).
 */
import type { RedisClient } from "./connection.js";

/**
 * The channel hash in one step. KEYS: the channel hash. ARGV: mode (`create`
 * writes only when the hash does not exist — this is what decides which of
 * concurrent creates of one id wins; `update` writes only when it does), the
 * expiry (ms since the epoch, PEXPIREAT) or '', then field/value pairs.
 * Answers 1 when written, 0 when not.
 */
const CHANNEL_RECORD = `
local exists = redis.call('EXISTS', KEYS[1]) == 1
if (ARGV[1] == 'create') == exists then return 0 end
if exists and redis.call('TYPE', KEYS[1]).ok ~= 'hash' then
  return redis.error_reply('WRONGTYPE channel record is not a hash')
end
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
if ARGV[2] ~= '' then redis.call('PEXPIREAT', KEYS[1], ARGV[2]) end
return 1
`;

/**
 * Deletes a passphrase record only when it opens the given channel, so a
 * removal never takes a passphrase another channel has claimed since.
 * KEYS: the passphrase record. ARGV: project, channel. Answers 1 when deleted.
 */
const RELEASE_PASSPHRASE = `
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then return 0 end
local owner = redis.call('HMGET', KEYS[1], 'project', 'channel')
if owner[1] ~= ARGV[1] or owner[2] ~= ARGV[2] then return 0 end
return redis.call('UNLINK', KEYS[1])
`;

export interface ChannelScriptCommands {
  blChannelRecord(key: string, mode: string, expireAt: string, ...pairs: string[]): Promise<number>;
  blReleasePassphrase(key: string, project: string, channel: string): Promise<number>;
}

export function defineChannelScripts(client: RedisClient): ChannelScriptCommands {
  client.defineCommand("blChannelRecord", { numberOfKeys: 1, lua: CHANNEL_RECORD });
  client.defineCommand("blReleasePassphrase", { numberOfKeys: 1, lua: RELEASE_PASSPHRASE });
  // defineCommand adds methods ioredis' types cannot know about.
  return client as unknown as ChannelScriptCommands;
}
