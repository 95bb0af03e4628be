/**
 * Raw reads of what a test server keeps in Redis, past the store's own code:
 * the documented key names of the seeded world (docs/architecture.md, "Redis
 * schema") and a snapshot of every key under the server's prefix, to prove
 * that a failed call changed nothing.
 */
import { Redis } from "ioredis";

/** A server's Redis: its URL and key prefix (a started boardline is one). */
export interface RedisPlace {
  readonly redisUrl: string;
  readonly prefix: string;
}

/** Where the seeded world's records are (a started boardline is one). */
export interface WorldPlace {
  readonly prefix: string;
  readonly world: { readonly project: string; readonly channel: string };
}

/** Every key under the prefix, each with its type and its whole contents. */
export type RedisSnapshot = Record<string, { readonly type: string; readonly value: unknown }>;

/** Opens a raw ioredis connection to the server's Redis (close it with `disconnect()`). */
export function rawRedis(place: Pick<RedisPlace, "redisUrl">): Redis {
  return new Redis(place.redisUrl, { maxRetriesPerRequest: 1 });
}

/** Reads every key under `place.prefix` with its type and value, on a connection of its own. */
export async function redisSnapshot(place: RedisPlace): Promise<RedisSnapshot> {
  const redis = rawRedis(place);
  try {
    const out: Record<string, { type: string; value: unknown }> = {};
    for (const key of await keysUnder(redis, place.prefix)) {
      const type = await redis.type(key);
      out[key] = { type, value: await contentsOf(redis, key, type) };
    }
    return out;
  } finally {
    redis.disconnect();
  }
}

/** The keys of a snapshot that are conversion records. */
export function conversionKeys(s: RedisSnapshot, place: Pick<RedisPlace, "prefix">): string[] {
  return Object.keys(s).filter((k) => k.startsWith(`${place.prefix}conv:`));
}

export function muteKey(at: WorldPlace, project = at.world.project, channel = at.world.channel): string {
  return `${at.prefix}chan:{${project}/${channel}}:pstn-mute`;
}

export function eventsKey(at: WorldPlace, project = at.world.project, channel = at.world.channel): string {
  return `${at.prefix}chan:{${project}/${channel}}:pstn-events`;
}

export function muteMetaKey(at: WorldPlace, project = at.world.project, channel = at.world.channel): string {
  return `${at.prefix}chan:{${project}/${channel}}:pstn-mute-meta`;
}

export function conversionKey(at: Pick<WorldPlace, "prefix">, uuid: string): string {
  return `${at.prefix}conv:{${uuid}}`;
}

async function keysUnder(redis: Redis, prefix: string): Promise<string[]> {
  const names: string[] = [];
  let cursor = "0";
  do {
    const [next, found] = await redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
    cursor = next;
    names.push(...found);
  } while (cursor !== "0");
  return [...new Set(names)].sort();
}

async function contentsOf(redis: Redis, key: string, type: string): Promise<unknown> {
  switch (type) {
    case "string":
      return redis.get(key);
    case "hash":
      return redis.hgetall(key);
    case "stream":
      return redis.xrange(key, "-", "+");
    case "list":
      return redis.lrange(key, 0, -1);
    case "set":
      return (await redis.smembers(key)).sort();
    case "zset":
      return redis.zrange(key, "0", "-1", "WITHSCORES");
    default:
      return undefined;
  }
}
