/**
 * Lua scripts of the phone line (src/services/pstn/line-ports.ts): one script
 * per report or command, on the channel's hash tag, so each change is atomic
 * with its events, exactly as the mute script is (scripts.ts). Every line
 * script takes the same keys and leading arguments, and starts with PRELUDE.
 *
 * KEYS: mute hash, meta hash, event stream, notify channel, channel record,
 * line hash, leases, policy hash. ARGV: by, at (ms), stream maxlen, the
 * channel's expiry ('' or ms), lease ms, PSTN_MAX_LINE; then the command's
 * own. The lease clock is Redis `TIME`, so every instance shares it. The
 * in-memory store does the same steps in TypeScript (src/store/memory/line.ts);
 * the store contract holds both to one behaviour.
 */
import type { RedisClient } from "./connection.js";

export const PRELUDE = `
local by, at, maxlen, expire_at = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local lease_ms, max_line = tonumber(ARGV[5]), tonumber(ARGV[6])
local types = {[1] = 'hash', [2] = 'hash', [3] = 'stream', [6] = 'hash', [7] = 'zset', [8] = 'hash'}
for i, want in pairs(types) do
  local t = redis.call('TYPE', KEYS[i]).ok
  if t ~= 'none' and t ~= want then
    return redis.error_reply('WRONGTYPE pstn line keys hold the wrong kind of value')
  end
end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local last_id = false
-- The keys written, which finish gives the channel's expiry: only those, as a report is frequent.
local touched = {}
local function emit(f)
  last_id = redis.call('XADD', KEYS[3], 'MAXLEN', '~', maxlen, '*', unpack(f))
  touched[3] = true
  return last_id
end
local function flag(uid)
  return redis.call('HGET', KEYS[1], uid) == '1' and '1' or '0'
end
local function record(uid)
  local raw = redis.call('HGET', KEYS[6], uid)
  if not raw then return nil end
  local ok, r = pcall(cjson.decode, raw)
  if ok and type(r) == 'table' and (r.on == 0 or r.on == 1) and type(r.seq) == 'string' then return r end
  return nil
end
local function save(uid, r)
  redis.call('HSET', KEYS[6], uid, cjson.encode(r))
  touched[6] = true
end
local function lease(uid)
  redis.call('ZADD', KEYS[7], now + lease_ms, uid)
  touched[7] = true
end
local function setter_of(uid)
  local m = redis.call('HGET', KEYS[2], uid)
  if m then
    local ok, d = pcall(cjson.decode, m)
    if ok and type(d) == 'table' and (d.setter == 'self' or d.setter == 'policy') then return d.setter end
  end
  return 'host'
end
local function set_mute(uid, mute, setter, all)
  redis.call('HSET', KEYS[1], uid, mute)
  local f = {'uid', uid, 'mute', mute, 'by', by, 'at', at}
  if setter ~= 'host' then f[#f + 1] = 'setter'; f[#f + 1] = setter end
  if all then f[#f + 1] = 'all'; f[#f + 1] = '1' end
  local id = emit(f)
  local tail = ''
  if setter ~= 'host' then tail = ',"setter":"' .. setter .. '"' end
  redis.call('HSET', KEYS[2], uid, '{"at":' .. at .. ',"by":' .. cjson.encode(by) .. ',"event_id":"' .. id .. '"' .. tail .. '}')
  touched[1] = true
  touched[2] = true
end
local function policy()
  local p = redis.call('HMGET', KEYS[8], 'mute_on_join', 'allow_self_unmute')
  return p[1] == '1', p[2] ~= '0'
end
local function set_policy(moj, allow)
  local was_moj, was_allow = policy()
  if moj == was_moj and allow == was_allow then return end
  local m, a = moj and '1' or '0', allow and '1' or '0'
  redis.call('HSET', KEYS[8], 'mute_on_join', m, 'allow_self_unmute', a)
  touched[8] = true
  emit({'kind', 'policy', 'uid', '', 'mute', '0', 'by', by, 'at', at, 'mute_on_join', m, 'allow_self_unmute', a})
end
local function join(uid, seq, caller, joined)
  if redis.call('ZCARD', KEYS[7]) >= max_line then return false end
  save(uid, {on = 1, seq = seq, caller = caller, joined = joined, hand = 0})
  lease(uid)
  local by_policy = policy() and flag(uid) == '0'
  local f = {'kind', 'join', 'uid', uid, 'mute', by_policy and '1' or flag(uid), 'by', by, 'at', at, 'caller', caller}
  if by_policy then f[#f + 1] = 'setter'; f[#f + 1] = 'policy' end
  emit(f)
  if by_policy then set_mute(uid, '1', 'policy') end
  return true
end
local function leave(uid, r, reason)
  r.on = 0; r.hand = 0; r.hand_at = nil
  save(uid, r)
  redis.call('ZREM', KEYS[7], uid)
  emit({'kind', 'leave', 'uid', uid, 'mute', flag(uid), 'by', by, 'at', at, 'reason', reason})
end
local function finish()
  if last_id then redis.pcall('SPUBLISH', KEYS[4], last_id) end
  if next(touched) == nil then return end
  if expire_at ~= '' then
    for i in pairs(touched) do redis.call('PEXPIREAT', KEYS[i], expire_at) end
  else
    local ttl = redis.call('PTTL', KEYS[5])
    if ttl > 0 then for i in pairs(touched) do redis.call('PEXPIRE', KEYS[i], ttl) end end
  end
end
`;

/**
 * One report of the gateway. ARGV[7..]: uid, sequence (20 digits), change
 * (join|leave|presence|keypad_mute|hand), its value (caller id, or 1|0),
 * joined at (ms). A sequence not above the participant's last is a duplicate
 * or stale and writes nothing. Answers {outcome, mute flag, meta value, line
 * record}: the participant after it.
 */
const REPORT = `${PRELUDE}
local uid, seq, change, value = ARGV[7], ARGV[8], ARGV[9], ARGV[10]
local r = record(uid)
local function answer(outcome, wrote)
  if wrote then finish() end
  return {outcome, redis.call('HGET', KEYS[1], uid) or '', redis.call('HGET', KEYS[2], uid) or '',
    redis.call('HGET', KEYS[6], uid) or ''}
end
if r and seq == r.seq then return answer('duplicate') end
if r and seq < r.seq then return answer('stale') end
local on = r ~= nil and r.on == 1
if change == 'join' then
  if on then
    r.seq = seq; save(uid, r); lease(uid)
    return answer('unchanged', true)
  end
  if not join(uid, seq, value, tonumber(ARGV[11])) then return answer('line_full') end
  return answer('applied', true)
end
if not on then
  if change ~= 'leave' then return answer('not_on_line') end
  -- Remembered, so a join the gateway sent before this leave stays late.
  save(uid, {on = 0, seq = seq, caller = r and r.caller or '', joined = r and r.joined or 0, hand = 0})
  return answer('unchanged', true)
end
if change == 'leave' then
  r.seq = seq
  leave(uid, r, 'reported')
  return answer('applied', true)
end
if change == 'keypad_mute' then
  local muted = flag(uid) == '1'
  if value == '0' and muted and not select(2, policy()) and setter_of(uid) ~= 'self' then
    lease(uid)
    return answer('refused', true)
  end
  r.seq = seq; save(uid, r); lease(uid)
  if (value == '1') == muted then return answer('unchanged', true) end
  set_mute(uid, value, 'self')
  return answer('applied', true)
end
r.seq = seq; lease(uid)
if change == 'hand' and r.hand ~= tonumber(value) then
  r.hand = tonumber(value); r.hand_at = tonumber(at); save(uid, r)
  emit({'kind', 'hand', 'uid', uid, 'mute', flag(uid), 'by', by, 'at', at, 'hand', value, 'setter', 'self'})
  return answer('applied', true)
end
save(uid, r)
return answer('unchanged', true)
`;

/**
 * The gateway's whole roster. ARGV[7..]: sequence, then uid, caller id,
 * joined at (ms) per member. Listed members not on the line join (unless a
 * newer report of theirs was applied), those on it get their lease; those on
 * it and not listed leave when their last report is older than the sync.
 * Answers {joined, left}.
 */
const SYNC = `${PRELUDE}
local seq = ARGV[7]
local listed, joined, left = {}, 0, 0
for i = 8, #ARGV, 3 do
  local uid = ARGV[i]
  listed[uid] = true
  local r = record(uid)
  if r and r.on == 1 then
    lease(uid)
  elseif (not r or r.seq < seq) and join(uid, seq, ARGV[i + 1], tonumber(ARGV[i + 2])) then
    joined = joined + 1
  end
end
for _, uid in ipairs(redis.call('ZRANGE', KEYS[7], 0, -1)) do
  if not listed[uid] then
    local r = record(uid)
    if not r or r.on == 0 then
      redis.call('ZREM', KEYS[7], uid)
    elseif r.seq < seq then
      r.seq = seq
      leave(uid, r, 'sync')
      left = left + 1
    end
  end
end
finish()
return {joined, left}
`;

/**
 * MuteAll. ARGV[7..]: mute (1|0), the policy's new mute_on_join ('' keeps
 * it), then the uids excepted. A participant already in that state counts as
 * unchanged, unless a mute takes over one the participant or the policy set
 * (so allow_self_unmute applies to it). Answers {changed, unchanged,
 * mute_on_join, allow_self_unmute, last event id or ''}.
 */
const MUTE_ALL = `${PRELUDE}
local want, moj = ARGV[7], ARGV[8]
local except = {}
for i = 9, #ARGV do except[ARGV[i]] = true end
if moj ~= '' then set_policy(moj == '1', select(2, policy())) end
local changed, unchanged = 0, 0
for _, uid in ipairs(redis.call('ZRANGE', KEYS[7], 0, -1)) do
  if except[uid] or (flag(uid) == want and (want == '0' or setter_of(uid) == 'host')) then
    unchanged = unchanged + 1
  else
    set_mute(uid, want, 'host', true)
    changed = changed + 1
  end
end
emit({'kind', 'mute_all', 'uid', '', 'mute', want, 'by', by, 'at', at, 'changed', tostring(changed)})
finish()
local m, a = policy()
return {changed, unchanged, m and 1 or 0, a and 1 or 0, last_id}
`;

/** SetPstnPolicy. ARGV[7..]: mute_on_join, allow_self_unmute ('' keeps each). Answers {mute_on_join, allow_self_unmute}. */
const SET_POLICY = `${PRELUDE}
local m, a = policy()
if ARGV[7] ~= '' then m = ARGV[7] == '1' end
if ARGV[8] ~= '' then a = ARGV[8] == '1' end
set_policy(m, a)
if last_id then finish() end
return {m and 1 or 0, a and 1 or 0}
`;

/** LowerHands. ARGV[7..]: the uids (none: everyone on the line). Answers how many hands it lowered. */
const LOWER_HANDS = `${PRELUDE}
local uids = {}
for i = 7, #ARGV do uids[#uids + 1] = ARGV[i] end
if #uids == 0 then uids = redis.call('ZRANGE', KEYS[7], 0, -1) end
local lowered = 0
for _, uid in ipairs(uids) do
  local r = record(uid)
  if r and r.on == 1 and r.hand == 1 then
    r.hand = 0; r.hand_at = tonumber(at); save(uid, r)
    emit({'kind', 'hand', 'uid', uid, 'mute', flag(uid), 'by', by, 'at', at, 'hand', '0', 'setter', 'host'})
    lowered = lowered + 1
  end
end
if lowered > 0 then finish() end
return lowered
`;

/** The keys every line script takes, in order. */
export type LineKeys = readonly [string, string, string, string, string, string, string, string];

/** by, at, maxlen, expireAt, lease ms, max line. */
export type LineArgs = readonly [string, string, string, string, string, string];

export interface LineScriptCommands {
  blLineReport(...args: [...LineKeys, ...LineArgs, ...string[]]): Promise<[string, string, string, string]>;
  blLineSync(...args: [...LineKeys, ...LineArgs, ...string[]]): Promise<[number, number]>;
  blLineMuteAll(...args: [...LineKeys, ...LineArgs, ...string[]]): Promise<[number, number, number, number, string]>;
  blLinePolicy(...args: [...LineKeys, ...LineArgs, string, string]): Promise<[number, number]>;
  blLineLowerHands(...args: [...LineKeys, ...LineArgs, ...string[]]): Promise<number>;
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

export function defineLineScripts(client: RedisClient): LineScriptCommands {
  const line = { numberOfKeys: 8 };
  client.defineCommand("blLineReport", { ...line, lua: REPORT });
  client.defineCommand("blLineSync", { ...line, lua: SYNC });
  client.defineCommand("blLineMuteAll", { ...line, lua: MUTE_ALL });
  client.defineCommand("blLinePolicy", { ...line, lua: SET_POLICY });
  client.defineCommand("blLineLowerHands", { ...line, lua: LOWER_HANDS });
  // defineCommand adds methods ioredis' types cannot know about.
  return client as unknown as LineScriptCommands;
}
