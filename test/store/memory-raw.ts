/**
 * Raw access to the in-memory store's key space (MemoryStore.data), the way a
 * Redis client reads and writes Redis: no validation, records of any shape.
 */
import type { MemoryKeyspace } from "../../src/store/memory/keyspace.js";
import type { RawAccess } from "./contract.js";

export function memoryRaw(data: MemoryKeyspace): RawAccess {
  /** Like Redis TTL: seconds left, -1 without expiry, -2 when missing. */
  const ttl = (key: string): number => {
    const entry = data.get(key);
    if (!entry) return -2;
    if (entry.expiresAt === undefined) return -1;
    return Math.ceil((entry.expiresAt - data.now()) / 1000);
  };
  const stream = (key: string) => {
    const entry = data.get(key);
    return entry?.type === "stream" ? entry.entries : [];
  };
  return {
    hgetall: async (key) => data.hashFields(key),
    async hset(key, fields) {
      const hash = data.writableHash(key);
      for (const [field, value] of Object.entries(fields)) hash.set(field, value);
    },
    async setString(key, value) {
      data.set(key, { type: "string", value });
    },
    xrange: async (key) => stream(key).map(({ id, fields }) => ({ id, fields: Object.entries(fields) })),
    async xadd(key, fields) {
      data.append(key, data.writableStream(key), fields, Number.MAX_SAFE_INTEGER);
    },
    xlen: async (key) => stream(key).length,
    ttl: async (key) => ttl(key),
    exists: async (key) => ttl(key) !== -2,
    async get(key) {
      const entry = data.get(key);
      return entry?.type === "string" ? entry.value : undefined;
    },
    async del(key) {
      data.delete(key);
    },
    async zadd(key, score, member) {
      data.writableSortedSet(key).set(member, score);
    },
    async zscore(key, member) {
      const entry = data.get(key);
      return entry?.type === "zset" ? entry.scores.get(member) : undefined;
    },
    keysUnder: async (prefix) => [...data.keys()].filter((k) => k.startsWith(prefix) && data.get(k)).sort(),
  };
}
