/**
 * Lua scripts of the lease sweep: the sweep of one channel (a line script,
 * line-scripts.ts), and its list of channels (keys.ts, `pstnLeasesDue`
 * and `pstnLeaseNotes`; one hash tag, so one slot): which channels have
 * participants on the line whose leases the sweep must look at, and when.
 * The list is kept beside the channels' own keys, not with them (a channel's
 * script cannot reach another slot), so it may hold a channel too long,
 * never drop one too early: see RESCHEDULE_LINE.
 */
import type { RedisClient } from "./connection.js";
import { type LineArgs, type LineKeys, PRELUDE } from "./line-scripts.js";

/**
 * The sweep of one channel: every participant whose lease ran out by the
 * Redis clock leaves (`lease`). ARGV[7]: at most this many. Answers {how
 * many left, when the next lease runs out ('' when the line is empty)}.
 */
const EXPIRE_LEASES = `${PRELUDE}
local due = redis.call('ZRANGEBYSCORE', KEYS[7], '-inf', now, 'LIMIT', 0, tonumber(ARGV[7]))
for _, uid in ipairs(due) do
  local r = record(uid)
  if r and r.on == 1 then leave(uid, r, 'lease') else redis.call('ZREM', KEYS[7], uid) end
end
if #due > 0 then finish() end
local first = redis.call('ZRANGE', KEYS[7], 0, 0, 'WITHSCORES')
return {#due, first[2] or ''}
`;

/**
 * The sweep's list of channels (keys.ts, `pstnLeasesDue` and
 * `pstnLeaseNotes`). NOTE, before a join or a sync writes the line: the
 * channel is due by ARGV[2] at the latest, and one more report was noted.
 * KEYS: due set, notes hash. ARGV: member, due (ms).
 */
const NOTE_LINE = `
redis.call('ZADD', KEYS[1], 'LT', ARGV[2], ARGV[1])
local notes = redis.call('HGET', KEYS[2], ARGV[1]) or '0:-1'
local count, empty = string.match(notes, '^(%d+):(-?%d+)$')
if not count then count, empty = '0', '-1' end
redis.call('HSET', KEYS[2], ARGV[1], tostring(tonumber(count) + 1) .. ':' .. empty)
return 0
`;

/**
 * Takes up to ARGV[1] due channels for this sweep, claiming each for ARGV[2]
 * ms (an instance that dies mid-sweep leaves them to the next one). Answers
 * {member, notes, …}.
 */
const TAKE_DUE_LINES = `
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local out = {}
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))) do
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), m)
  out[#out + 1] = m
  out[#out + 1] = redis.call('HGET', KEYS[2], m) or '0:-1'
end
return out
`;

/**
 * After sweeping a channel: due again when its next lease runs out (ARGV[3]);
 * with an empty line, looked at again in ARGV[4] ms, and dropped only when
 * the previous sweep found it empty too with no report noted since (ARGV[2]:
 * the notes this sweep took). A join's note comes before its line script, so
 * a join under way when the line looked empty is seen by the next sweep.
 */
const RESCHEDULE_LINE = `
if ARGV[3] ~= '' then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
  return 0
end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local notes = redis.call('HGET', KEYS[2], ARGV[1]) or '0:-1'
local count, empty = string.match(notes, '^(%d+):(-?%d+)$')
if notes == ARGV[2] and count == empty then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[2], ARGV[1])
  return 1
end
if notes == ARGV[2] and count then redis.call('HSET', KEYS[2], ARGV[1], count .. ':' .. count) end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), ARGV[1])
return 0
`;

export interface LineSweepScriptCommands {
  blLineExpire(...args: [...LineKeys, ...LineArgs, string]): Promise<[number, string]>;
  blNoteLine(due: string, notes: string, member: string, dueAt: string): Promise<number>;
  blTakeDueLines(due: string, notes: string, limit: string, claimMs: string): Promise<string[]>;
  blRescheduleLine(
    due: string,
    notes: string,
    member: string,
    seen: string,
    next: string,
    recheckMs: string,
  ): Promise<number>;
}

export function defineLineSweepScripts(client: RedisClient): LineSweepScriptCommands {
  client.defineCommand("blLineExpire", { numberOfKeys: 8, lua: EXPIRE_LEASES });
  client.defineCommand("blNoteLine", { numberOfKeys: 2, lua: NOTE_LINE });
  client.defineCommand("blTakeDueLines", { numberOfKeys: 2, lua: TAKE_DUE_LINES });
  client.defineCommand("blRescheduleLine", { numberOfKeys: 2, lua: RESCHEDULE_LINE });
  // defineCommand adds methods ioredis' types cannot know about.
  return client as unknown as LineSweepScriptCommands;
}
