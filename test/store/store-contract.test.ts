/**
 * The one store contract (./contract.ts), run against the Redis store on the
 * harness's redis-server and against the in-memory store.
 */
import { Redis } from "ioredis";
import { silentLogger } from "../../src/log.js";
import { MemoryStore } from "../../src/store/memory-store.js";
import { createRedisStore } from "../../src/store/redis-store.js";
import { freePort } from "../harness/redis-server.js";
import { deleteKeysWithPrefix, redisUrl, uniquePrefix } from "../harness/redis-url.js";
import { type ContractSubject, type RawAccess, redisRaw, storeContract } from "./contract.js";

storeContract("RedisStore", {
  approximateTrim: true,
  hasClock: false,
  async factory(): Promise<ContractSubject> {
    const url = redisUrl();
    const keyPrefix = uniquePrefix();
    const store = createRedisStore({ mode: "single", url }, { keyPrefix, logger: silentLogger() });
    await store.waitUntilReady();
    const client = new Redis(url);
    return {
      store,
      keys: store.keys,
      raw: redisRaw(client),
      async unreachableStore() {
        const port = await freePort(); // nothing listens there
        return createRedisStore({ mode: "single", url: `redis://127.0.0.1:${port}` }, { keyPrefix, logger: silentLogger() });
      },
      async cleanup() {
        await store.close();
        await deleteKeysWithPrefix(url, keyPrefix);
        await client.quit();
      },
    };
  },
});

storeContract("MemoryStore", {
  approximateTrim: false,
  hasClock: true,
  async factory(): Promise<ContractSubject> {
    let offset = 0;
    const store = new MemoryStore({ keyPrefix: uniquePrefix(), now: () => Date.now() + offset });
    return {
      store,
      keys: store.keys,
      raw: memoryRaw(store),
      advanceClock(ms) {
        offset += ms;
      },
      async unreachableStore() {
        const unreachable = new MemoryStore();
        unreachable.setUnavailable(true);
        return unreachable;
      },
      async cleanup() {
        await store.close();
      },
    };
  },
});

function memoryRaw(store: MemoryStore): RawAccess {
  return {
    hgetall: async (key) => store.rawHash(key) ?? {},
    async hset(key, fields) {
      store.writeRawHash(key, fields);
    },
    async setString(key, value) {
      store.writeRawString(key, value);
    },
    async xrange(key) {
      return (store.rawStream(key) ?? []).map(({ id, fields }) => ({ id, fields: Object.entries(fields) }));
    },
    xlen: async (key) => store.rawStream(key)?.length ?? 0,
    ttl: async (key) => store.ttlSeconds(key),
    exists: async (key) => store.ttlSeconds(key) !== -2,
  };
}
