/**
 * The in-memory store's `PstnEventLog`: reads the channel's event stream in
 * its key space as the Redis script does, and notifies subscribed channels of
 * each new event in process (on a later turn, as a pub/sub message arrives).
 */
import { Failure } from "../../services/failure.js";
import type {
  ChannelRef,
  PstnEventLog,
  PstnEventPage,
  PstnNotificationListener,
  PstnNotifications,
} from "../../services/ports.js";
import { compareStreamIds } from "../../services/pstn/stream-ids.js";
import type { KeySchema } from "../schema/keys.js";
import type { MemoryKeyspace } from "./keyspace.js";
import { EMPTY_STREAM, pstnEventPage } from "../schema/pstn-event-page.js";

export class MemoryNotifications implements PstnNotifications {
  private readonly listeners = new Set<PstnNotificationListener>();
  private readonly counts = new Map<string, number>();

  constructor(
    private readonly keys: KeySchema,
    private readonly guard: () => void,
  ) {}

  listen(listener: PstnNotificationListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async subscribe(ref: ChannelRef): Promise<void> {
    this.guard();
    const name = this.name(ref);
    this.counts.set(name, (this.counts.get(name) ?? 0) + 1);
  }

  unsubscribe(ref: ChannelRef): void {
    const name = this.name(ref);
    const n = (this.counts.get(name) ?? 0) - 1;
    if (n > 0) this.counts.set(name, n);
    else this.counts.delete(name);
  }

  /** What the mute does after writing: the event reaches the listeners of a subscribed channel. */
  publish(ref: ChannelRef, eventId: string): void {
    if (!this.counts.has(this.name(ref))) return;
    setImmediate(() => {
      for (const l of this.listeners) l.notified(ref, eventId);
    });
  }

  private name(ref: ChannelRef): string {
    return this.keys.pstnNotify(ref.project, ref.channel);
  }
}

export class MemoryPstnEvents implements PstnEventLog {
  readonly notifications: MemoryNotifications;

  constructor(
    private readonly data: MemoryKeyspace,
    private readonly keys: KeySchema,
    private readonly guard: () => void,
  ) {
    this.notifications = new MemoryNotifications(keys, guard);
  }

  async readEvents(channel: ChannelRef, after: string | undefined, count: number): Promise<PstnEventPage> {
    this.guard();
    const now = this.data.now();
    const entry = this.data.get(this.keys.pstnEvents(channel.project, channel.channel));
    if (entry === undefined) return pstnEventPage({ ...EMPTY_STREAM, entries: [], now }, after, count);
    if (entry.type !== "stream") {
      throw new Failure("unavailable", { cause: new Error("WRONGTYPE pstn events key is not a stream") });
    }
    const entries =
      after === undefined ? [] : entry.entries.filter((e) => compareStreamIds(e.id, after) > 0).slice(0, count);
    const read = {
      lastGeneratedId: entry.lastSeq < 0 ? "0-0" : `${entry.lastMs}-${entry.lastSeq}`,
      maxDeletedId: "0-0",
      entriesAdded: entry.added,
      length: entry.entries.length,
      firstId: entry.entries[0]?.id,
      entries,
      now,
    };
    return pstnEventPage(read, after, count);
  }
}
