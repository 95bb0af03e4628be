/**
 * Lua script of the whiteboard record's re-sealing (`boardline whiteboard
 * reseal`), on one key, so Cluster routes it. Registered per connection like
 * the store's other scripts (a Cluster node's own connection for a write with
 * WAIT).
 */
import type { RedisClient } from "./connection.js";

/**
 * Compare-and-set of hash fields, so a pass that runs while the service
 * serves never overwrites a change made after it read the record. KEYS: the
 * hash. ARGV: triples of field, the value it was read with, its new value.
 * Writes every new value when each field still holds the value it was read
 * with, else nothing. Answers 1 when written, 0 when not (a key that is
 * missing or not a hash included).
 */
const REPLACE_HASH_FIELDS = `
if redis.call('TYPE', KEYS[1]).ok ~= 'hash' then return 0 end
for i = 1, #ARGV, 3 do
  if redis.call('HGET', KEYS[1], ARGV[i]) ~= ARGV[i + 1] then return 0 end
end
for i = 1, #ARGV, 3 do
  redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 2])
end
return 1
`;

export interface WhiteboardScriptCommands {
  blReplaceHashFields(key: string, ...triples: string[]): Promise<number>;
}

export function defineWhiteboardScripts(client: RedisClient): WhiteboardScriptCommands {
  client.defineCommand("blReplaceHashFields", { numberOfKeys: 1, lua: REPLACE_HASH_FIELDS });
  // defineCommand adds methods ioredis' types cannot know about.
  return client as unknown as WhiteboardScriptCommands;
}
