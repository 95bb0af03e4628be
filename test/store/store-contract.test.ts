/**
 * The one store contract (./contract.ts), run against the Redis store on the
 * harness's redis-server and against the in-memory store.
 */
import { Redis } from "ioredis";
import { MemoryStore } from "../../src/store/memory-store.js";
import { deleteKeysWithPrefix, redisUrl, uniquePrefix } from "../harness/redis-url.js";
import { type ContractSubject, type RawAccess, redisSubject, storeContract } from "./contract.js";

storeContract("RedisStore", {
  approximateTrim: true,
  hasClock: false,
  factory: () =>
    redisSubject({
      connection: { mode: "single", url: redisUrl() },
      unreachable: (port) => ({ mode: "single", url: `redis://127.0.0.1:${port}` }),
      client: new Redis(redisUrl()),
      cleanup: (keyPrefix) => deleteKeysWithPrefix(redisUrl(), keyPrefix).then(() => undefined),
    }),
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
