/**
 * Lua scripts of the Redis store, registered with ioredis `defineCommand`
 * (EVALSHA, falling back to EVAL when the server does not know the script —
 * e.g. after a Redis restart). Every key a script touches is passed in KEYS,
 * so Cluster routes it, and the keys of one script share a hash tag.
 */
import type { RedisClient } from "./connection.js";

/**
 * PSTN mute: hash field + stream entry + who set it when, atomically (a script
 * runs alone), and the new event id announced on the channel's sharded pub/sub
 * channel for the watch hubs (docs/architecture.md, "Watching mute events";
 * SPUBLISH to a channel nobody subscribes to costs next to nothing; `pcall`, so
 * a Redis older than 7.0, which has no SPUBLISH and cannot be watched, still
 * mutes). KEYS: mute hash, event stream, meta hash, notify channel, channel
 * record (one hash tag, so one slot: Cluster refuses a shard channel of
 * another slot in a script). A channel created with an expiry gives the three
 * keys that expiry, so they go with it: ARGV[7], the expiry its passphrase
 * record carries (a past one deletes them at once — a mute let through by a
 * read cache just as the channel expired leaves nothing behind), or else the
 * channel record's TTL (records written before passphrase records carried it). ARGV: uid, mute (1|0), by, at (ms), maxlen, the meta value up to
 * the event id (src/store/schema/channel-records.ts, `muteMetaHead`). Redis does not roll a script back
 * when a later command fails, so the key types are checked before anything is
 * written: all writes or none. Answers the new stream entry's id.
 */
const SET_MUTE = `
local hashType = redis.call('TYPE', KEYS[1]).ok
local streamType = redis.call('TYPE', KEYS[2]).ok
local metaType = redis.call('TYPE', KEYS[3]).ok
if (hashType ~= 'none' and hashType ~= 'hash') or (streamType ~= 'none' and streamType ~= 'stream')
  or (metaType ~= 'none' and metaType ~= 'hash') then
  return redis.error_reply('WRONGTYPE pstn mute keys hold the wrong kind of value')
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[5], '*',
  'uid', ARGV[1], 'mute', ARGV[2], 'by', ARGV[3], 'at', ARGV[4])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[6] .. id .. '"}')
redis.pcall('SPUBLISH', KEYS[4], id)
if ARGV[7] and ARGV[7] ~= '' then
  for i = 1, 3 do redis.call('PEXPIREAT', KEYS[i], ARGV[7]) end
else
  local ttl = redis.call('PTTL', KEYS[5])
  if ttl > 0 then
    for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ttl) end
  end
end
return id
`;

/**
 * A channel's PSTN snapshot in one step, so no event lands between reading the
 * state and reading how far the event stream got. KEYS: mute hash, meta hash,
 * event stream, line hash, policy hash. Answers {mute hash pairs, meta hash
 * pairs, newest event id or "0-0", line hash pairs, policy hash pairs}; a key
 * of another type reads as empty (a malformed record is absent).
 */
const PSTN_SNAPSHOT = `
local function pairs_of(key)
  if redis.call('TYPE', key).ok ~= 'hash' then return {} end
  return redis.call('HGETALL', key)
end
local last = '0-0'
if redis.call('TYPE', KEYS[3]).ok == 'stream' then
  local newest = redis.call('XREVRANGE', KEYS[3], '+', '-', 'COUNT', 1)
  if newest[1] then last = newest[1][1] end
end
return {pairs_of(KEYS[1]), pairs_of(KEYS[2]), last, pairs_of(KEYS[4]), pairs_of(KEYS[5])}
`;

/**
 * Writes a passphrase record unless it belongs to another channel (checked and
 * written in one step, so two operators cannot both claim a passphrase).
 * KEYS: passphrase record. ARGV: project, channel, role, when the record
 * expires ('' or ms since the epoch: PEXPIREAT, a channel's expiry), and
 * optionally the id of the PASSPHRASE_KEYS key its digest was made under.
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
if ARGV[5] and ARGV[5] ~= '' then
  redis.call('HSET', KEYS[1], 'key', ARGV[5])
end
if ARGV[4] and ARGV[4] ~= '' then
  redis.call('HSET', KEYS[1], 'expire_at', ARGV[4])
  redis.call('PEXPIREAT', KEYS[1], ARGV[4])
else
  redis.call('HDEL', KEYS[1], 'expire_at')
end
if t == 'none' then return {1} end
return {2}
`;

/**
 * Takes one guess of a caller (a sliding window): drops the guesses older than
 * the window, then adds ARGV[1] at the server's clock when fewer than ARGV[2]
 * are left, and keeps the set for one more window. Answers 0 when granted,
 * else the milliseconds until the oldest guess leaves the window, negated
 * when some guess in it is not kept yet (its call is still being judged and
 * may give it back; see src/store/guesses.ts). One key, so
 * it runs on a Cluster; the server's clock, so every instance shares one
 * window. KEYS: the caller's guesses. ARGV: slot, limit, window ms.
 */
const TAKE_GUESS = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local taken = redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')
local n = #taken / 2
if n >= tonumber(ARGV[2]) then
  if n == 0 then return window end
  local wait = math.max(1, tonumber(taken[2]) + window - now)
  for i = 1, #taken, 2 do
    if string.sub(taken[i], -1) ~= '!' then return -wait end
  end
  return wait
end
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('PEXPIRE', KEYS[1], window)
return 0
`;

/**
 * A taken guess counts as a miss: its member gets the kept mark ('!', KEPT in
 * src/store/guesses.ts) and keeps the time it was taken. Nothing when it has
 * left the window. KEYS: the caller's guesses. ARGV: slot.
 */
const KEEP_GUESS = `
local at = redis.call('ZSCORE', KEYS[1], ARGV[1])
if at then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('ZADD', KEYS[1], at, ARGV[1] .. '!')
end
return 0
`;

/** The script commands, as ioredis adds them to the client. */
export interface ScriptCommands {
  blSetMute(
    muteKey: string,
    eventsKey: string,
    metaKey: string,
    notifyChannel: string,
    channelRecord: string,
    uid: string,
    mute: string,
    by: string,
    at: string,
    maxlen: string,
    metaHead: string,
    /** The channel's expiry (ms since the epoch), or "". */
    expireAt: string,
  ): Promise<string>;
  blPstnSnapshot(
    muteKey: string,
    metaKey: string,
    eventsKey: string,
    lineKey: string,
    policyKey: string,
  ): Promise<[string[], string[], string, string[], string[]]>;
  blClaimPassphrase(
    key: string,
    project: string,
    channel: string,
    role: string,
    expireAt: string,
    keyId?: string,
  ): Promise<ClaimReply>;
  blTakeGuess(key: string, slot: string, limit: string, windowMs: string): Promise<number>;
  blKeepGuess(key: string, slot: string): Promise<number>;
}

export type ClaimReply = [0, string, string] | [1] | [2];

export function defineScripts(client: RedisClient): ScriptCommands {
  client.defineCommand("blSetMute", { numberOfKeys: 5, lua: SET_MUTE });
  client.defineCommand("blPstnSnapshot", { numberOfKeys: 5, lua: PSTN_SNAPSHOT });
  client.defineCommand("blClaimPassphrase", { numberOfKeys: 1, lua: CLAIM_PASSPHRASE });
  client.defineCommand("blTakeGuess", { numberOfKeys: 1, lua: TAKE_GUESS });
  client.defineCommand("blKeepGuess", { numberOfKeys: 1, lua: KEEP_GUESS });
  // defineCommand adds methods ioredis' types cannot know about.
  return client as unknown as ScriptCommands;
}
