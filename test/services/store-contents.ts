/**
 * What the domain classes' unit tests share: a caller, and the in-memory
 * store's contents read key by key, so a test can say that a refused call left
 * the store exactly as it was.
 */
import type { Caller } from "../../src/services/ports.js";
import type { Fields } from "../../src/store/schema/channel-records.js";
import type { MemoryStore } from "../../src/store/memory/store.js";

/** A caller of `project` holding `scopes` (none: the rights every token has). */
export function callerOf(project: string, scopes: readonly string[] = [], subject = "alice"): Caller {
  return { project, subject, scopes: new Set(scopes) };
}

/** Every live key with a deep copy of its value (hashes, streams and sorted sets included), for `toEqual`. */
export function storeContents(store: MemoryStore): Map<string, unknown> {
  const contents = new Map<string, unknown>();
  for (const key of [...store.data.keys()].sort()) {
    const entry = store.data.get(key);
    if (entry !== undefined) contents.set(key, structuredClone(entry));
  }
  return contents;
}

/** The fields of the project's admin (audit) events, oldest first. */
export function adminEvents(store: MemoryStore, project: string): Fields[] {
  const entry = store.data.get(store.keys.adminEvents(project));
  return entry?.type === "stream" ? entry.entries.map((e) => e.fields) : [];
}
