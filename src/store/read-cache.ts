/**
 * A short, bounded cache in front of the two records every request reads —
 * passphrase records and whiteboard settings — so a busy channel costs one
 * Redis round trip per mute instead of two. The bound is the documented
 * PASSPHRASE_CACHE_MS: a passphrase or whiteboard record that another writer
 * creates, changes or deletes takes effect within that time on every
 * instance. Failures are never cached.
 */
import type {
  ConversionStore,
  IdempotencyStore,
  MuteChange,
  PassphraseRecord,
  PstnEventLog,
  Store,
  WhiteboardSettings,
} from "../services/ports.js";
import type { PstnSnapshot } from "../services/pstn/snapshot.js";

export const READ_CACHE_MAX_ENTRIES = 10_000;

class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; expiresAt: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number,
  ) {}

  /** The cached value, `miss` when there is none (a cached value may itself be undefined). */
  get(key: string): { value: V } | undefined {
    const e = this.entries.get(key);
    if (e === undefined) return undefined;
    if (this.now() >= e.expiresAt) {
      this.entries.delete(key);
      return undefined;
    }
    return { value: e.value };
  }

  set(key: string, value: V): void {
    if (this.entries.size >= READ_CACHE_MAX_ENTRIES) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(key, { value, expiresAt: this.now() + this.ttlMs });
  }

  get size(): number {
    return this.entries.size;
  }
}

export class ReadCachedStore implements Store {
  private readonly passphrases: TtlCache<PassphraseRecord | undefined>;
  private readonly whiteboards: TtlCache<WhiteboardSettings | undefined>;

  constructor(
    private readonly inner: Store,
    ttlMs: number,
    now: () => number = Date.now,
  ) {
    this.passphrases = new TtlCache(ttlMs, now);
    this.whiteboards = new TtlCache(ttlMs, now);
  }

  /** Not cached: conversion records change while they are followed. */
  get conversions(): ConversionStore {
    return this.inner.conversions;
  }

  /** Not cached: watches read what is new. */
  get pstnEvents(): PstnEventLog {
    return this.inner.pstnEvents;
  }

  /** Not cached: each claim must see the record as it is now. */
  get idempotency(): IdempotencyStore {
    return this.inner.idempotency;
  }

  async lookupPassphrase(passphrase: string): Promise<PassphraseRecord | undefined> {
    const hit = this.passphrases.get(passphrase);
    if (hit !== undefined) return hit.value;
    const record = await this.inner.lookupPassphrase(passphrase);
    this.passphrases.set(passphrase, record);
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
  recordPassphraseMiss(callerKey: string, windowSeconds: number): Promise<void> {
    return this.inner.recordPassphraseMiss(callerKey, windowSeconds);
  }
  passphraseMisses(callerKey: string): Promise<{ count: number; resetSeconds: number }> {
    return this.inner.passphraseMisses(callerKey);
  }
  ping(): Promise<void> {
    return this.inner.ping();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}
