/**
 * The mute-event watches of this instance (docs/architecture.md, "Watching
 * mute events"). One per instance, over the store's `PstnEventLog`:
 *
 * - each watched channel is one feed (pstn-feed.ts), subscribed once through
 *   the store's one subscriber however many watches it has;
 * - a notification wakes the channel's feed, which reads the channel once and
 *   hands each new event to its watchers in order; when the subscriber
 *   reconnects, every feed it names reads its channel again from where its
 *   watchers stand, so nothing published meanwhile is missed;
 * - every `sweepMs` every feed reads its channel anyway, a few hundred at a
 *   time: a safety net under pub/sub, and how the hub learns that quiet
 *   channels are delivered up to about now, which keeps the cursors of
 *   many-channel watches short;
 * - each watch takes a slot of the instance's watches (watch-slots.ts);
 *   `close` ends every watch as `unavailable`, so clients reconnect elsewhere.
 */
import { Failure } from "./failure.js";
import { Feed, type FeedMember, type FeedSettings } from "./pstn-feed.js";
import type { ChannelRef, PstnEventLog, PstnNotificationListener } from "./ports.js";
import type { WatchCursor, WatchStart } from "./pstn-cursor.js";
import { PstnWatcher } from "./pstn-watcher.js";
import { earlierStreamId } from "./stream-ids.js";
import type { WatchSlots } from "./watch-slots.js";

export interface PstnWatchSettings extends FeedSettings {
  /** How often every watched channel is read even without a notification. */
  readonly sweepMs: number;
  /** Channels read at once by a sweep. */
  readonly sweepBatch: number;
  /** Events waiting for a client that does not take them before its watch ends (it resumes from its cursor). */
  readonly maxQueue: number;
}

export const DEFAULT_PSTN_WATCH_SETTINGS: PstnWatchSettings = {
  pageSize: 1000,
  clockToleranceMs: 1000,
  retryMs: 250,
  maxRetryMs: 5000,
  sweepMs: 10_000,
  sweepBatch: 256,
  maxQueue: 10_000,
};

export class PstnWatchHub implements PstnNotificationListener {
  private readonly feeds = new Map<string, Feed>();
  private readonly watches = new Map<PstnWatcher, Array<{ member: FeedMember; feed: Feed }>>();
  private readonly stopListening: () => void;
  private readonly sweeper: NodeJS.Timeout;
  private sweeping = false;
  private closed = false;

  constructor(
    private readonly log: PstnEventLog,
    private readonly slots: WatchSlots,
    private readonly s: PstnWatchSettings = DEFAULT_PSTN_WATCH_SETTINGS,
  ) {
    this.stopListening = log.notifications.listen(this);
    this.sweeper = setInterval(() => void this.sweep(), s.sweepMs);
    this.sweeper.unref();
  }

  /**
   * Opens a watch of `channels` (one project's) from `start`: resolves once
   * every channel is subscribed and read from its start, so a failure to do
   * that (`unavailable`, `out_of_range`) comes before any event. Takes a slot
   * (`rate_limited` when none is left). `signal` ends the watch.
   */
  async open(
    channels: readonly ChannelRef[],
    start: WatchStart,
    cursor: WatchCursor,
    signal?: AbortSignal,
  ): Promise<PstnWatcher> {
    if (this.closed) throw shuttingDown();
    const release = this.slots.take();
    const watcher: PstnWatcher = new PstnWatcher(cursor, this.s.maxQueue, {
      deliveredUpTo: () => this.deliveredUpTo(watcher),
      detach: () => {
        this.detach(watcher);
        release();
      },
    });
    const joins = channels.map((ref, index) => this.join(watcher, ref, index, startOf(start, index)));
    const onAbort = () => watcher.end();
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted) onAbort();
    try {
      await Promise.all(joins);
    } catch (e) {
      watcher.end();
      throw e;
    }
    watcher.moveBase();
    return watcher;
  }

  notified(channel: ChannelRef, eventId: string): void {
    this.feeds.get(feedKey(channel))?.notified(eventId);
  }

  resubscribed(channels: readonly ChannelRef[]): void {
    for (const ref of channels) void this.feeds.get(feedKey(ref))?.read();
  }

  /** Ends every watch as `unavailable` and refuses new ones. */
  close(): void {
    this.closed = true;
    clearInterval(this.sweeper);
    this.stopListening();
    for (const watcher of [...this.watches.keys()]) watcher.fail(shuttingDown());
  }

  /** Reads every watched channel, `sweepBatch` at a time, then moves the watches' cursors up. */
  async sweep(): Promise<void> {
    if (this.sweeping || this.closed) return;
    this.sweeping = true;
    try {
      const feeds = [...this.feeds.values()];
      for (let i = 0; i < feeds.length; i += this.s.sweepBatch) {
        await Promise.all(feeds.slice(i, i + this.s.sweepBatch).map((f) => f.read()));
      }
      for (const watcher of this.watches.keys()) watcher.moveBase();
    } finally {
      this.sweeping = false;
    }
  }

  private join(watcher: PstnWatcher, ref: ChannelRef, index: number, position: string | undefined): Promise<void> {
    const key = feedKey(ref);
    let feed = this.feeds.get(key);
    if (feed === undefined) {
      feed = new Feed(ref, this.log.notifications.subscribe(ref), this.log, this.s);
      this.feeds.set(key, feed);
    }
    let settle!: (failure?: unknown) => void;
    const joined = new Promise<void>((resolve, reject) => {
      let settled = false;
      settle = (failure) => {
        if (settled) return;
        settled = true;
        if (failure === undefined) resolve();
        else reject(failure);
      };
    });
    joined.catch(() => {}); // observed by `open`
    const member: FeedMember = { watcher, index, position, joined: false, settle };
    feed.members.add(member);
    const list = this.watches.get(watcher) ?? [];
    list.push({ member, feed });
    this.watches.set(watcher, list);
    void feed.read();
    return joined;
  }

  /** The watcher left: its feeds forget it, and a feed nobody watches any more unsubscribes. */
  private detach(watcher: PstnWatcher): void {
    const list = this.watches.get(watcher) ?? [];
    this.watches.delete(watcher);
    for (const { member, feed } of list) {
      feed.members.delete(member);
      member.settle(new Failure("unavailable", { detail: "the watch ended" }));
      if (feed.members.size > 0 || this.feeds.get(feedKey(feed.ref)) !== feed) continue;
      this.feeds.delete(feedKey(feed.ref));
      feed.stop();
      this.log.notifications.unsubscribe(feed.ref);
    }
  }

  /** How far every channel of the watch is delivered: the earliest of its feeds' safe positions. */
  private deliveredUpTo(watcher: PstnWatcher): string | undefined {
    const list = this.watches.get(watcher);
    if (list === undefined || list.some(({ member }) => !member.joined)) return undefined;
    return list.map(({ feed }) => feed.safe).reduce(earlierStreamId);
  }
}

function startOf(start: WatchStart, index: number): string | undefined {
  return start.kind === "now" ? undefined : (start.positions.get(index) ?? start.base);
}

function feedKey(ref: ChannelRef): string {
  return JSON.stringify([ref.project, ref.channel]);
}

function shuttingDown(): Failure {
  return new Failure("unavailable", { detail: "the server is shutting down; watch again" });
}
