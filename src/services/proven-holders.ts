/**
 * The guessing limit's memo of proven holders (see passphrase-guard.ts): a
 * caller whose call with a passphrase was right takes no guess for that
 * passphrase for a while. Each instance keeps its own, in memory, by caller
 * and sha256 of the passphrase, never the passphrase.
 */
import { createHash } from "node:crypto";
import { LRUCache } from "lru-cache";
import type { Caller } from "./ports.js";

/** Proven holders each instance remembers, least recently used going first. */
export const PROVEN_HOLDERS_MAX = 10_000;

/**
 * The callers that proved they hold a passphrase, each until its time is up.
 * Keys are the caller and the passphrase's sha256, never the passphrase.
 */
export class ProvenHolders {
  private readonly until: LRUCache<string, number>;

  constructor(
    private readonly ttlMs: number,
    max: number,
    private readonly now: () => number,
  ) {
    this.until = new LRUCache({ max });
  }

  has(key: string): boolean {
    const until = this.until.get(key);
    if (until === undefined) return false;
    if (this.now() < until) return true;
    this.until.delete(key);
    return false;
  }

  remember(key: string): void {
    this.until.set(key, this.now() + this.ttlMs);
  }

  forget(key: string): void {
    this.until.delete(key);
  }

  /** The keys held, for tests that check their shape. */
  keys(): string[] {
    return [...this.until.keys()];
  }
}

/** The caller and the passphrase's sha256 (hex): the passphrase itself is never kept. */
export function provenHolderKey(caller: Caller, passphrase: string): string {
  return JSON.stringify([caller.project, caller.subject, createHash("sha256").update(passphrase).digest("hex")]);
}
