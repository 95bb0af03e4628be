/**
 * Walking the keyspace, for the operator's maintenance only (doctor, reindex,
 * and the channels no index knows yet) — never on an API path. Over the
 * directory's primitives, so both stores share it: every key of a pattern on
 * every master, and every passphrase record, a page of records read at once
 * (one round trip per page, not per key).
 */
import type { PassphraseRecord, ReindexOptions } from "../../services/ports.js";
import { parsePassphrase } from "../schema/channel-records.js";
import type { KeySchema } from "../schema/keys.js";
import type { ChannelPrimitives } from "./primitives.js";

/** Keys per SCAN step. */
export const SCAN_BATCH = 500;

/**
 * One throttled, resumable pass over the keys matching `pattern`: from
 * `options.from`, `options.batch` keys a step, `options.pauseMs` between steps
 * (so a serving Redis is not hogged), at most `options.maxSteps` steps;
 * `visit` sees each key in turn. Answers the cursor to resume from ("0": done).
 */
export async function throttledScan(
  p: ChannelPrimitives,
  pattern: string,
  options: ReindexOptions,
  visit: (key: string) => Promise<void>,
): Promise<string> {
  const batch = options.batch ?? SCAN_BATCH;
  const pauseMs = options.pauseMs ?? 10;
  let cursor = options.from ?? "0";
  for (let step = 0; options.maxSteps === undefined || step < options.maxSteps; step++) {
    const page = await p.scan(pattern, cursor, batch);
    for (const key of page.keys) await visit(key);
    cursor = page.cursor;
    if (cursor === "0") break;
    if (pauseMs > 0) await new Promise((r) => setTimeout(r, pauseMs));
  }
  return cursor;
}

/** Every key matching `pattern`, one SCAN step after another. */
export async function* scanKeys(p: ChannelPrimitives, pattern: string): AsyncGenerator<string> {
  let cursor = "0";
  do {
    const page = await p.scan(pattern, cursor, SCAN_BATCH);
    yield* page.keys;
    cursor = page.cursor;
  } while (cursor !== "0");
}

/** Every well-formed passphrase record, with the hash its key carries. */
export async function* passphraseRecords(
  p: ChannelPrimitives,
  keys: KeySchema,
): AsyncGenerator<{ sha: string; record: PassphraseRecord }> {
  let cursor = "0";
  do {
    const page = await p.scan(keys.passphrasePattern(), cursor, SCAN_BATCH);
    cursor = page.cursor;
    const shas = page.keys.flatMap((key) => keys.passphraseHashOf(key) ?? []);
    const records = await Promise.all(shas.map(async (sha) => parsePassphrase(await p.readPassphrase(sha))));
    for (const [i, sha] of shas.entries()) {
      const record = records[i];
      if (record !== undefined) yield { sha, record };
    }
  } while (cursor !== "0");
}

/** The hashes of the passphrases that open `project`/`channel`, found by SCAN: for a channel no index knows. */
export async function unindexedPassphrases(
  p: ChannelPrimitives,
  keys: KeySchema,
  project: string,
  channel: string,
): Promise<string[]> {
  const found: string[] = [];
  for await (const { sha, record } of passphraseRecords(p, keys)) {
    if (record.project === project && record.channel === channel) found.push(sha);
  }
  return found;
}
