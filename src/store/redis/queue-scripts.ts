/**
 * Lua scripts of the conversion queue (docs/conversion-queue.md), registered
 * like the other scripts of the Redis store (src/store/redis/scripts.ts):
 * EVALSHA with EVAL as the fallback, every key in KEYS. A script's keys share
 * one hash tag — a project's queue keys `proj:{<project>}:…`, or a task's
 * record keys `conv:{<uuid>}…` — so each runs on one Cluster slot, alone.
 */
import type { RedisClient } from "./connection.js";

/**
 * Accepts a task into its project's queue. KEYS: queue, reuse entry.
 * ARGV: uuid, max, reuse ('1'/'0'), replacing uuid ('' for none), reuse ttl s.
 * Returns {'reused', uuid}, {'full', length} or {'queued', position from 1}.
 * The tail's score + 1 keeps arrival order (scores are not times: instances' clocks differ).
 */
const ENQUEUE = `
if ARGV[3] == '1' then
  local named = redis.call('GET', KEYS[2])
  if named and named ~= ARGV[4] then return {'reused', named} end
end
local length = redis.call('ZCARD', KEYS[1])
if length >= tonumber(ARGV[2]) then return {'full', length} end
local tail = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
local score = 0
if tail[2] then score = tonumber(tail[2]) + 1 end
redis.call('ZADD', KEYS[1], score, ARGV[1])
redis.call('SET', KEYS[2], ARGV[1], 'EX', ARGV[5])
return {'queued', length + 1}
`;

/**
 * The first task of a project's queue not being submitted, when it is the
 * project's turn. KEYS: queue, pace, lease. ARGV: owner, pace ms, then the
 * ids the caller is submitting. Returns {'lost'}, {'empty'}, {'busy'} (every
 * task at the head is being submitted), {'wait', ms} or {'submit', uuid}; a
 * turn taken starts the next pace (the pace key, holding the uuid, lives that
 * long), so every instance waits it out, whichever submits next.
 */
const TAKE_TURN = `
if redis.call('GET', KEYS[3]) ~= ARGV[1] then return {'lost'} end
local heads = redis.call('ZRANGE', KEYS[1], 0, #ARGV - 2)
if not heads[1] then return {'empty'} end
local busy = {}
for i = 3, #ARGV do busy[ARGV[i]] = true end
local pick
for _, id in ipairs(heads) do
  if not busy[id] then
    pick = id
    break
  end
end
if not pick then return {'busy'} end
local left = redis.call('PTTL', KEYS[2])
if left > 0 then return {'wait', left} end
redis.call('SET', KEYS[2], pick, 'PX', ARGV[2])
return {'submit', pick}
`;

/** Holds the project's next turn back at least ARGV[1] ms. KEYS: pace. */
const HOLD = `
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], '1', 'PX', ARGV[1]) end
return 1
`;

/**
 * Marks a queued task as being submitted. KEYS: record. ARGV: at (ms).
 * Returns 'gone', 'submitted' (it has the backend's uuid), 'ended' (no longer Queued) or 'marked'.
 */
const MARK_SUBMITTING = `
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then return 'gone' end
local f = redis.call('HMGET', KEYS[1], 'status', 'backend_uuid')
if f[2] then return 'submitted' end
if f[1] ~= 'Queued' then return 'ended' end
local attempts = (tonumber(redis.call('HGET', KEYS[1], 'attempts')) or 0) + 1
redis.call('HSET', KEYS[1], 'attempts', attempts, 'submitting_at', ARGV[1])
return 'marked'
`;

/**
 * Records a submission. KEYS: record, changes. ARGV: backend uuid, api,
 * status, at, retention s, changes maxlen. A task still Queued takes the
 * backend's status (one changes entry); one that ended meanwhile (cancelled)
 * keeps it. Either way the uuid is kept and the request dropped.
 * Returns 'gone', 'cancelled' or 'recorded'.
 */
const RECORD_SUBMISSION = `
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then return 'gone' end
local queued = redis.call('HGET', KEYS[1], 'status') == 'Queued'
redis.call('HSET', KEYS[1], 'backend_uuid', ARGV[1], 'api', ARGV[2], 'submitted_at', ARGV[4])
redis.call('HDEL', KEYS[1], 'resource', 'submitting_at')
if queued then
  redis.call('HSET', KEYS[1], 'status', ARGV[3], 'percent', '0', 'updated_at', ARGV[4])
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[6], '*', 'status', ARGV[3], 'percent', '0', 'at', ARGV[4])
  redis.call('EXPIRE', KEYS[2], ARGV[5])
end
redis.call('EXPIRE', KEYS[1], ARGV[5])
if queued then return 'recorded' end
return 'cancelled'
`;

/**
 * Ends a task that is still Queued. KEYS: record, changes. ARGV: status, at,
 * retention s, changes maxlen, failed reason ('' for none).
 * Returns 'gone', 'not-queued' or 'ended'.
 */
const END_QUEUED = `
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then return 'gone' end
if redis.call('HGET', KEYS[1], 'status') ~= 'Queued' then return 'not-queued' end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'updated_at', ARGV[2])
if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'failed_reason', ARGV[5]) end
redis.call('HDEL', KEYS[1], 'resource', 'submitting_at')
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[4], '*', 'status', ARGV[1], 'percent', '0', 'at', ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[3])
return 'ended'
`;

/** The script commands, as ioredis adds them to the client. */
export interface QueueScriptCommands {
  blQueueEnqueue(queue: string, reuse: string, ...args: string[]): Promise<[string, string | number]>;
  blQueueTakeTurn(queue: string, pace: string, lease: string, ...args: string[]): Promise<string[]>;
  blQueueHold(pace: string, ms: string): Promise<1>;
  blQueueMarkSubmitting(record: string, at: string): Promise<string>;
  blQueueRecordSubmission(record: string, changes: string, ...args: string[]): Promise<string>;
  blQueueEndQueued(record: string, changes: string, ...args: string[]): Promise<string>;
}

export function defineQueueScripts(client: RedisClient): QueueScriptCommands {
  client.defineCommand("blQueueEnqueue", { numberOfKeys: 2, lua: ENQUEUE });
  client.defineCommand("blQueueTakeTurn", { numberOfKeys: 3, lua: TAKE_TURN });
  client.defineCommand("blQueueHold", { numberOfKeys: 1, lua: HOLD });
  client.defineCommand("blQueueMarkSubmitting", { numberOfKeys: 1, lua: MARK_SUBMITTING });
  client.defineCommand("blQueueRecordSubmission", { numberOfKeys: 2, lua: RECORD_SUBMISSION });
  client.defineCommand("blQueueEndQueued", { numberOfKeys: 2, lua: END_QUEUED });
  // defineCommand adds methods ioredis' types cannot know about.
  return client as unknown as QueueScriptCommands;
}
