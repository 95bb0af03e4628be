/**
 * Lua scripts of the conversion follower's keys, registered like the other
 * scripts of the Redis store (src/store/redis/scripts.ts): EVALSHA with EVAL as the
 * fallback, every key in KEYS. The keys of one script are one task's record,
 * changes stream and lease, which share the task's `{<uuid>}` hash tag, so
 * each script runs on one Cluster slot, alone, and its writes land together.
 */
import type { RedisClient } from "./connection.js";

/**
 * Leases a due task unless its record is gone or a live lease holds it.
 * KEYS: record, lease. ARGV: owner, lease ms.
 * Returns 1 leased, 0 held by a live lease, -1 record gone (or not a hash).
 */
const CLAIM = `
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then return -1 end
if redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
`;

/** Extends the lease when ARGV[1] holds it. KEYS: lease. ARGV: owner, lease ms. Returns 1 or 0. */
const RENEW = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`;

/** Deletes the lease when ARGV[1] holds it. KEYS: lease. ARGV: owner. Returns 1 or 0. */
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

/**
 * Saves a state of a leased task. KEYS: record, changes stream, lease.
 * ARGV: owner, at (ms), retention s, changes maxlen, status, percent, then
 * field/value pairs of the state's other fields (pages, page_count, …).
 * Returns 'not-owner' (lease not held), 'gone' (no record; the lease is
 * dropped), 'unchanged' (every field already so; nothing written) or
 * 'changed'. Key types are checked before anything is written (a script is not
 * rolled back when a later command fails).
 */
const SAVE = `
if redis.call('GET', KEYS[3]) ~= ARGV[1] then return 'not-owner' end
local recordType = redis.call('TYPE', KEYS[1]).ok
if recordType == 'none' then
  redis.call('DEL', KEYS[3])
  return 'gone'
end
local changesType = redis.call('TYPE', KEYS[2]).ok
if recordType ~= 'hash' or (changesType ~= 'none' and changesType ~= 'stream') then
  return redis.error_reply('WRONGTYPE conversion keys hold the wrong kind of value')
end
local old = redis.call('HMGET', KEYS[1], 'status', 'percent')
local moved = old[1] ~= ARGV[5] or old[2] ~= ARGV[6]
local changed = moved
for i = 7, #ARGV, 2 do
  if redis.call('HGET', KEYS[1], ARGV[i]) ~= ARGV[i + 1] then changed = true end
end
if not changed then return 'unchanged' end
redis.call('HSET', KEYS[1], 'status', ARGV[5], 'percent', ARGV[6], 'updated_at', ARGV[2], unpack(ARGV, 7))
redis.call('EXPIRE', KEYS[1], ARGV[3])
if moved then
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[4], '*', 'status', ARGV[5], 'percent', ARGV[6], 'at', ARGV[2])
end
if changesType ~= 'none' or moved then redis.call('EXPIRE', KEYS[2], ARGV[3]) end
return 'changed'
`;

/** Marks the record announced, unless it is gone (no stub record). KEYS: record. Returns 1 or 0. */
const MARK_ANNOUNCED = `
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then return 0 end
redis.call('HSET', KEYS[1], 'announced', '1')
return 1
`;

/**
 * Moves a task of the due set to an earlier score; never adds one (ZADD XX LT,
 * which needs Redis 6.2, as a script). KEYS: conv-due. ARGV: score, uuid.
 * Returns 1 when the task is in the set (moved or already due sooner), else 0.
 */
const WAKE = `
local score = redis.call('ZSCORE', KEYS[1], ARGV[2])
if not score then return 0 end
if tonumber(score) > tonumber(ARGV[1]) then redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2]) end
return 1
`;

/** The script commands, as ioredis adds them to the client. */
export interface ConversionScriptCommands {
  blConvClaim(recordKey: string, leaseKey: string, owner: string, leaseMs: string): Promise<1 | 0 | -1>;
  blConvRenew(leaseKey: string, owner: string, leaseMs: string): Promise<1 | 0>;
  blConvRelease(leaseKey: string, owner: string): Promise<1 | 0>;
  blConvSave(recordKey: string, changesKey: string, leaseKey: string, ...args: string[]): Promise<string>;
  blConvMarkAnnounced(recordKey: string): Promise<1 | 0>;
  blConvWake(dueKey: string, score: string, uuid: string): Promise<1 | 0>;
}

export function defineConversionScripts(client: RedisClient): ConversionScriptCommands {
  client.defineCommand("blConvClaim", { numberOfKeys: 2, lua: CLAIM });
  client.defineCommand("blConvRenew", { numberOfKeys: 1, lua: RENEW });
  client.defineCommand("blConvRelease", { numberOfKeys: 1, lua: RELEASE });
  client.defineCommand("blConvSave", { numberOfKeys: 3, lua: SAVE });
  client.defineCommand("blConvMarkAnnounced", { numberOfKeys: 1, lua: MARK_ANNOUNCED });
  client.defineCommand("blConvWake", { numberOfKeys: 1, lua: WAKE });
  // defineCommand adds methods ioredis' types cannot know about.
  return client as unknown as ConversionScriptCommands;
}
