/**
 * A bounded in-memory cache whose entries expire, used by both the read cache
 * in front of the store (passphrase and whiteboard records) and the JWT
 * verification cache. It sits at the root of src/, beside log.ts, and imports
 * nothing of boardline's: the store and auth adapters may both import it
 * without one adapter depending on the other, and the domain (src/services)
 * never needs it.
 *
 * Eviction is least-recently-used (lru-cache), not first-in-first-out, so a
 * client sending new keys pushes out what nobody reads rather than the entries
 * real traffic keeps using. Misses (a lookup that found nothing) have their
 * own, smaller room: a flood of wrong guesses only ever evicts other misses,
 * never a hit. Expiry is checked on read against an injectable clock (the
 * tests step it), so an expired entry is never served.
 */
import { LRUCache } from "lru-cache";

export interface TtlCacheOptions {
  /** How long an entry is served at most. */
  readonly ttlMs: number;
  /** Room for entries holding a value. */
  readonly maxHits: number;
  /** Room for misses (entries holding `undefined`); 0 = misses are not cached. */
  readonly maxMisses: number;
  /** Milliseconds since the epoch; read at each call, so a faked Date is seen. */
  readonly now?: () => number;
}

interface Entry<V> {
  readonly value: V;
  readonly expiresAtMs: number;
}

export class TtlCache<V extends {}> {
  private readonly hits: LRUCache<string, Entry<V>>;
  private readonly misses: LRUCache<string, Entry<undefined>> | undefined;
  private readonly ttlMs: number;
  private readonly now: () => number;

  constructor(options: TtlCacheOptions) {
    this.ttlMs = options.ttlMs;
    this.now = options.now ?? (() => Date.now());
    this.hits = new LRUCache({ max: options.maxHits });
    this.misses = options.maxMisses > 0 ? new LRUCache({ max: options.maxMisses }) : undefined;
  }

  /** The cached value (`{ value: undefined }` for a cached miss), or undefined when nothing is cached. */
  get(key: string): { readonly value: V | undefined } | undefined {
    const entry = this.hits.get(key) ?? this.misses?.get(key);
    if (entry === undefined) return undefined;
    if (this.now() >= entry.expiresAtMs) {
      this.delete(key);
      return undefined;
    }
    return entry;
  }

  /**
   * Caches a value (or, for `undefined`, a miss) for the TTL, or until
   * `expiresAtMs` when that comes sooner (a token's `exp`).
   */
  set(key: string, value: V | undefined, expiresAtMs = Number.POSITIVE_INFINITY): void {
    const until = Math.min(this.now() + this.ttlMs, expiresAtMs);
    this.delete(key);
    if (value !== undefined) this.hits.set(key, { value, expiresAtMs: until });
    else this.misses?.set(key, { value: undefined, expiresAtMs: until });
  }

  delete(key: string): void {
    this.hits.delete(key);
    this.misses?.delete(key);
  }
}
