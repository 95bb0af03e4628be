/**
 * A read of a channel's mute events as both stores answer it
 * (`PstnEventLog.readEvents`): the entries after a position, and what the
 * stream says about entries that are gone.
 *
 * Why not XINFO's `max-deleted-entry-id` alone: Redis raises it for XDEL only,
 * not for the `MAXLEN ~` trimming of every mute (checked on 7.0 by the store
 * contract). So a position is also lost when entries were ever removed
 * (`entries-added` > `length`) and the oldest entry kept is after it. That
 * says "lost" for a reader right at the newest trimmed entry too, which had
 * lost nothing: a false alarm costs that reader a new snapshot, never an event.
 */
import type { MuteEvent, PstnEventPage } from "../../services/ports.js";
import { laterStreamId, STREAM_START } from "../../services/pstn/stream-ids.js";
import type { Fields } from "./channel-records.js";
import { parseStreamEvent } from "./line-records.js";

/** What a read learned about the stream, with the entries it read. */
export interface StreamRead {
  /** The newest id the stream ever gave an entry ("0-0" for a missing stream). */
  readonly lastGeneratedId: string;
  /** XINFO's `max-deleted-entry-id` ("0-0" when never raised). */
  readonly maxDeletedId: string;
  /** Entries ever added and entries there now (XINFO `entries-added`, `length`). */
  readonly entriesAdded: number;
  readonly length: number;
  /** The oldest entry kept, undefined when the stream is empty. */
  readonly firstId: string | undefined;
  /** The entries after the position, oldest first, at most `count`. */
  readonly entries: ReadonlyArray<{ readonly id: string; readonly fields: Fields }>;
  /** The store's clock at the read, ms. */
  readonly now: number;
}

/** The page of a read after `after` (undefined: a read of the tail) asking for `count` entries. */
export function pstnEventPage(read: StreamRead, after: string | undefined, count: number): PstnEventPage {
  const events: MuteEvent[] = [];
  for (const { id, fields } of read.entries) {
    const event = parseStreamEvent(id, fields);
    if (event !== undefined) events.push(event);
  }
  const lastRead = read.entries.at(-1)?.id;
  return {
    events,
    through: after === undefined ? read.lastGeneratedId : (lastRead ?? after),
    complete: after === undefined || read.entries.length < count,
    lostBefore: lostBefore(read),
    now: read.now,
  };
}

function lostBefore(read: StreamRead): string {
  const removed = read.entriesAdded > read.length;
  if (!removed) return read.maxDeletedId;
  // Every entry before the oldest one kept may be gone; with none kept, every entry is.
  const trimmedTo = read.firstId ?? read.lastGeneratedId;
  return laterStreamId(read.maxDeletedId, trimmedTo);
}

export const EMPTY_STREAM: Omit<StreamRead, "entries" | "now"> = {
  lastGeneratedId: STREAM_START,
  maxDeletedId: STREAM_START,
  entriesAdded: 0,
  length: 0,
  firstId: undefined,
};
