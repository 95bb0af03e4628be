/**
 * A short, bounded cache in front of the two records every request reads —
 * passphrase records and whiteboard settings — so a busy channel costs one
 * Redis round trip per mute instead of two. The bound is the documented
 * PASSPHRASE_CACHE_MS: a passphrase or whiteboard record that another writer
 * creates, changes or deletes takes effect within that time on every
 * instance. Failures are never cached. Absences are, in a smaller room of
 * their own (see TtlCache), so wrong guesses cannot push real channels out.
 */
import type {
  ChannelDirectory,
  ConversionQueueStore,
  ConversionStore,
  GuessTaken,
  IdempotencyStore,
  MuteChange,
  PassphraseRecord,
  PhoneLine,
  PstnEventLog,
  Store,
  WhiteboardSettings,
} from "../services/ports.js";
import type { PstnSnapshot } from "../services/pstn/snapshot.js";
import { TtlCache } from "../ttl-cache.js";

/** Records (passphrases, whiteboard settings) each cache keeps, least recently used going first. */
export const READ_CACHE_MAX_ENTRIES = 10_000;
/**
 * Absences each cache keeps, in their own room: guessed passphrases are all
 * misses, so a guessing client only ever pushes out other misses.
 */
export const READ_CACHE_MAX_MISSES = 1_000;

export class ReadCachedStore implements Store {
  private readonly passphrases: TtlCache<PassphraseRecord>;
  private readonly whiteboards: TtlCache<WhiteboardSettings>;

  constructor(
    private readonly inner: Store,
    ttlMs: number,
    now: () => number = Date.now,
  ) {
    const options = { ttlMs, maxHits: READ_CACHE_MAX_ENTRIES, maxMisses: READ_CACHE_MAX_MISSES, now };
    this.passphrases = new TtlCache(options);
    this.whiteboards = new TtlCache(options);
  }

  /** Not cached: conversion records change while they are followed. */
  get conversions(): ConversionStore {
    return this.inner.conversions;
  }

  get conversionQueue(): ConversionQueueStore {
    return this.inner.conversionQueue;
  }

  /** Not cached: watches read what is new. */
  get pstnEvents(): PstnEventLog {
    return this.inner.pstnEvents;
  }

  /** Not cached: every report is a change. */
  get line(): PhoneLine {
    return this.inner.line;
  }

  /** Not cached: each claim must see the record as it is now. */
  get idempotency(): IdempotencyStore {
    return this.inner.idempotency;
  }

  /**
   * Not cached: the admin API reads what is there now. A rotated or removed
   * passphrase still opens its channel through this cache's passphrase
   * records for up to the cache's bound (PASSPHRASE_CACHE_MS).
   */
  get channels(): ChannelDirectory {
    return this.inner.channels;
  }

  /**
   * A record of a channel with an expiry is kept no longer than that expiry, so
   * an expired channel stops opening at once on every instance, not within the
   * cache's bound after it.
   */
  async lookupPassphrase(project: string, passphrase: string): Promise<PassphraseRecord | undefined> {
    // The project's length first: no two (project, passphrase) pairs make one key.
    const key = `${project.length}:${project}${passphrase}`;
    const hit = this.passphrases.get(key);
    if (hit !== undefined) return hit.value;
    const record = await this.inner.lookupPassphrase(project, passphrase);
    this.passphrases.set(key, record, record?.expireAt);
    return record;
  }

  async getWhiteboard(project: string): Promise<WhiteboardSettings | undefined> {
    const hit = this.whiteboards.get(project);
    if (hit !== undefined) return hit.value;
    const settings = await this.inner.getWhiteboard(project);
    this.whiteboards.set(project, settings);
    return settings;
  }

  setMute(change: MuteChange): Promise<void> {
    return this.inner.setMute(change);
  }
  /** Not cached: a snapshot is worth taking only when it is current. */
  getPstnSnapshot(project: string, channel: string): Promise<PstnSnapshot> {
    return this.inner.getPstnSnapshot(project, channel);
  }
  takeGuess(callerKey: string, slot: string, limit: number, windowSeconds: number): Promise<GuessTaken> {
    return this.inner.takeGuess(callerKey, slot, limit, windowSeconds);
  }
  returnGuess(callerKey: string, slot: string): Promise<void> {
    return this.inner.returnGuess(callerKey, slot);
  }
  keepGuess(callerKey: string, slot: string): Promise<void> {
    return this.inner.keepGuess(callerKey, slot);
  }
  ping(): Promise<void> {
    return this.inner.ping();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}
