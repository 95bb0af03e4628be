/**
 * The Redis store's idempotency records (idempotency-records.ts), one script
 * per operation, each on one key (so any Cluster slot will do), through the
 * store's plumbing (src/store/redis/calls.ts): bounded, coalesced, failing as
 * `unavailable`. The claim is SET NX PX on a hash: read the record, or write a
 * new `pending` one with its expiry, in one step. The claim, the completion and
 * the mark of an unknown outcome are acknowledged writes (`calls.write`: with
 * REDIS_MIN_REPLICAS, on that many replicas before they count), since a record
 * lost in a failover would let a retry do the work twice; a release is not
 * (a lost one only keeps the key locked until its claim runs out).
 */
import type { ClaimRequest, IdempotencyClaim, IdempotencyScope, IdempotencyStore } from "../../services/ports.js";
import { doneFields, existingClaim, pendingFields } from "../schema/idempotency-records.js";
import type { KeySchema } from "../schema/keys.js";
import { pairsToFields } from "../schema/channel-records.js";
import type { RedisCalls } from "./calls.js";
import { perConnection } from "./cluster-connections.js";
import type { RedisClient } from "./connection.js";

/** Lua: whether the hash at KEYS[1] is a record boardline wrote (the rule of `existingClaim`). */
const READABLE = `
local function readable(key)
  if redis.call('TYPE', key).ok ~= 'hash' then return false end
  local v = redis.call('HMGET', key, 'state', 'fingerprint', 'answer')
  if not v[2] or v[2] == '' then return false end
  if v[1] == 'done' then return v[3] ~= false end
  return v[1] == 'pending' or v[1] == 'unknown'
end
`;

/** Lua: whether ARGV[1] holds the record at KEYS[1]. */
const HELD = `
local function held(key, owner)
  if redis.call('TYPE', key).ok ~= 'hash' then return false end
  local v = redis.call('HMGET', key, 'state', 'owner')
  return (v[1] == 'pending' or v[1] == 'unknown') and v[2] == owner
end
`;

/**
 * KEYS: record. ARGV: lock ms, then the new record's field/value pairs.
 * Returns {fields…, pttl} of a readable record, or {} when it claimed the key.
 */
const CLAIM = `${READABLE}
if readable(KEYS[1]) then
  local out = redis.call('HGETALL', KEYS[1])
  out[#out + 1] = tostring(redis.call('PTTL', KEYS[1]))
  return out
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return {}
`;

/** KEYS: record. ARGV: owner, ttl ms, then the done record's pairs. Returns 1 written, 0 held by another call. */
const COMPLETE = `${HELD}
if redis.call('EXISTS', KEYS[1]) == 1 and not held(KEYS[1], ARGV[1]) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`;

/** KEYS: record. ARGV: owner, lock ms. Returns 1 marked, 0 not held. */
const MARK_UNKNOWN = `${HELD}
if not held(KEYS[1], ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'state', 'unknown')
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`;

/** KEYS: record. ARGV: owner. Returns 1 deleted, 0 not held. */
const RELEASE = `${HELD}
if not held(KEYS[1], ARGV[1]) then return 0 end
return redis.call('DEL', KEYS[1])
`;

interface IdempotencyScripts {
  blIdemClaim(key: string, lockMs: string, ...pairs: string[]): Promise<string[]>;
  blIdemComplete(key: string, owner: string, ttlMs: string, ...pairs: string[]): Promise<1 | 0>;
  blIdemMarkUnknown(key: string, owner: string, lockMs: string): Promise<1 | 0>;
  blIdemRelease(key: string, owner: string): Promise<1 | 0>;
}

function defineIdempotencyScripts(client: RedisClient): IdempotencyScripts {
  client.defineCommand("blIdemClaim", { numberOfKeys: 1, lua: CLAIM });
  client.defineCommand("blIdemComplete", { numberOfKeys: 1, lua: COMPLETE });
  client.defineCommand("blIdemMarkUnknown", { numberOfKeys: 1, lua: MARK_UNKNOWN });
  client.defineCommand("blIdemRelease", { numberOfKeys: 1, lua: RELEASE });
  // defineCommand adds methods ioredis' types cannot know about.
  return client as unknown as IdempotencyScripts;
}

/** The scripts on a connection: the client's, or (writes with WAIT on a Cluster) a node's own. */
const scriptsOn = perConnection(defineIdempotencyScripts);

export class RedisIdempotency implements IdempotencyStore {
  private readonly scripts: IdempotencyScripts;

  constructor(
    private readonly calls: RedisCalls,
    private readonly keys: KeySchema,
    private readonly ttlSeconds: number,
  ) {
    this.scripts = scriptsOn(calls.client);
  }

  async claim(scope: IdempotencyScope, request: ClaimRequest): Promise<IdempotencyClaim> {
    const pairs = Object.entries(pendingFields(request)).flat();
    const key = this.keyOf(scope);
    const reply = await this.calls.write("claimIdempotencyKey", key, (c) =>
      scriptsOn(c).blIdemClaim(key, String(request.lockMs), ...pairs),
    );
    if (reply.length === 0) return { kind: "claimed" };
    const found = existingClaim(pairsToFields(reply.slice(0, -1)), Number(reply.at(-1)));
    if (found === undefined) throw new Error("claimIdempotencyKey: the script answered an unreadable record");
    return found;
  }

  async complete(scope: IdempotencyScope, request: Omit<ClaimRequest, "lockMs">, answer: string): Promise<boolean> {
    const pairs = Object.entries(doneFields(request, answer)).flat();
    const ttlMs = String(this.ttlSeconds * 1000);
    const key = this.keyOf(scope);
    const reply = await this.calls.write("completeIdempotencyKey", key, (c) =>
      scriptsOn(c).blIdemComplete(key, request.owner, ttlMs, ...pairs),
    );
    return reply === 1;
  }

  async markUnknown(scope: IdempotencyScope, owner: string, lockMs: number): Promise<boolean> {
    const key = this.keyOf(scope);
    const reply = await this.calls.write("markIdempotencyKeyUnknown", key, (c) =>
      scriptsOn(c).blIdemMarkUnknown(key, owner, String(lockMs)),
    );
    return reply === 1;
  }

  async release(scope: IdempotencyScope, owner: string): Promise<boolean> {
    const reply = await this.calls.call("releaseIdempotencyKey", () =>
      this.scripts.blIdemRelease(this.keyOf(scope), owner),
    );
    return reply === 1;
  }

  private keyOf(scope: IdempotencyScope): string {
    return this.keys.idempotency(scope.project, scope.subject, scope.key);
  }
}
