/**
 * The one store contract (./contract.ts), run against the Redis store on the
 * harness's redis-server and against the in-memory store.
 */
import { Redis } from "ioredis";
import { MemoryStore } from "../../src/store/memory/store.js";
import { deleteKeysWithPrefix, redisUrl, uniquePrefix } from "../harness/redis-url.js";
import { CONTRACT_SECRETS_KEYS, type ContractSubject, redisSubject, storeContract } from "./contract.js";
import { CONTRACT_LINE_LIMITS } from "./line-contract.js";
import { memoryRaw } from "./memory-raw.js";

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
    const store = new MemoryStore({
      keyPrefix: uniquePrefix(),
      now: () => Date.now() + offset,
      secretsKeys: CONTRACT_SECRETS_KEYS,
      line: CONTRACT_LINE_LIMITS,
    });
    return {
      store,
      keys: store.keys,
      raw: memoryRaw(store.data),
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
