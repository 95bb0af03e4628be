/**
 * Lua scripts of the Redis store, registered with ioredis `defineCommand`
 * (EVALSHA, falling back to EVAL when the server does not know the script —
 * e.g. after a Redis restart). Every key a script touches is passed in KEYS,
 * so Cluster routes it, and the keys of one script share a hash tag.
 */
import type { RedisClient } from "./redis-connection.js";

/**
 * PSTN mute: hash field + stream entry, atomically (a script runs alone).
 * KEYS: mute hash, event stream. ARGV: uid, mute (1|0), by, at (ms), maxlen.
 * Redis does not roll a script back when a later command fails, so the key
 * types are checked before anything is written: both writes or none.
 */
const SET_MUTE = `
local hashType = redis.call('TYPE', KEYS[1]).ok
local streamType = redis.call('TYPE', KEYS[2]).ok
if (hashType ~= 'none' and hashType ~= 'hash') or (streamType ~= 'none' and streamType ~= 'stream') then
  return redis.error_reply('WRONGTYPE pstn mute keys hold the wrong kind of value')
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[5], '*',
  'uid', ARGV[1], 'mute', ARGV[2], 'by', ARGV[3], 'at', ARGV[4])
`;

/**
 * Writes a passphrase record unless it belongs to another channel (checked and
 * written in one step, so two operators cannot both claim a passphrase).
 * KEYS: passphrase record. ARGV: project, channel, role.
 * Returns {0, owner project, owner channel} on conflict, {1} created, {2} updated.
 */
const CLAIM_PASSPHRASE = `
local t = redis.call('TYPE', KEYS[1]).ok
if t ~= 'none' and t ~= 'hash' then
  return redis.error_reply('WRONGTYPE passphrase record is not a hash')
end
local owner = redis.call('HMGET', KEYS[1], 'project', 'channel')
if owner[1] and (owner[1] ~= ARGV[1] or owner[2] ~= ARGV[2]) then
  return {0, owner[1], owner[2] or ''}
end
redis.call('HSET', KEYS[1], 'project', ARGV[1], 'channel', ARGV[2], 'role', ARGV[3])
if t == 'none' then return {1} end
return {2}
`;

/**
 * One more wrong passphrase: INCR, and start the window's expiry on the first
 * miss (never extended, so a window always ends). KEYS: counter. ARGV: window s.
 */
const COUNT_MISS = `
local n = redis.call('INCR', KEYS[1])
if n == 1 or redis.call('TTL', KEYS[1]) < 0 then
  redis.call('EXPIRE', KEYS[1], ARGV[1])
end
return n
`;

/** The script commands, as ioredis adds them to the client. */
export interface ScriptCommands {
  blSetMute(
    muteKey: string,
    eventsKey: string,
    uid: string,
    mute: string,
    by: string,
    at: string,
    maxlen: string,
  ): Promise<string>;
  blClaimPassphrase(key: string, project: string, channel: string, role: string): Promise<ClaimReply>;
  blCountMiss(key: string, windowSeconds: string): Promise<number>;
}

export type ClaimReply = [0, string, string] | [1] | [2];

export function defineScripts(client: RedisClient): ScriptCommands {
  client.defineCommand("blSetMute", { numberOfKeys: 2, lua: SET_MUTE });
  client.defineCommand("blClaimPassphrase", { numberOfKeys: 1, lua: CLAIM_PASSPHRASE });
  client.defineCommand("blCountMiss", { numberOfKeys: 1, lua: COUNT_MISS });
  // defineCommand adds methods ioredis' types cannot know about.
  return client as unknown as ScriptCommands;
}
