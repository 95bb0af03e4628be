/**
 * The mute-event watches of this instance (docs/architecture.md, "Watching
 * mute events"). One per instance, over the store's `PstnEventLog`:
 *
 * - each watched channel is one `WatchedChannel` (watched-channel.ts),
 *   subscribed once through the store's one subscriber however many watches
 *   it has;
 * - a notification wakes the watched channel, which reads the stream once and
 *   hands each new event to its watches in order; when the subscriber
 *   reconnects, every channel it names reads its stream again from where its
 *   watches stand, so nothing published meanwhile is missed;
 * - every `sweepMs` every watched channel reads its stream anyway, a few hundred at a
 *   time: a safety net under pub/sub, and how the hub learns that quiet
 *   channels are delivered up to about now, which keeps the cursors of
 *   many-channel watches short;
 * - each watch takes a slot of the instance's watches, of its project's share
 *   (watch-slots.ts);
 *   `close` ends every watch as `unavailable`, so clients reconnect elsewhere.
 */
import { Failure } from "../failure.js";
import { WatchedChannel, type WatchedChannelMember, type WatchedChannelSettings } from "./watched-channel.js";
import type { ChannelRef, PstnEventLog, PstnNotificationListener } from "../ports.js";
import type { Cancellation } from "../push-stream.js";
import type { WatchCursor, WatchStart } from "./cursor.js";
import { type Present, PstnWatch, type WatchHooks } from "./watch.js";
import { earlierStreamId } from "./stream-ids.js";
import type { WatchSlots } from "../watch-slots.js";

export interface PstnWatchSettings extends WatchedChannelSettings {
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
  private readonly channels = new Map<string, WatchedChannel>();
  /** Each open watch, with its channels (as members of each). */
  private readonly watches = new Map<PstnWatch<unknown>, Membership[]>();
  private readonly hooks: WatchHooks = {
    deliveredUpTo: (watch) => this.deliveredUpTo(watch),
    detach: (watch) => this.detach(watch),
  };
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
   * (`rate_limited` when none is left). Its events go out as `present` makes
   * them. `cancellation` ends the watch. Without `lineEvents` it gets the
   * mute changes only, as every watch did before the line had other events.
   */
  async open<T>(
    channels: readonly ChannelRef[],
    start: WatchStart,
    cursor: WatchCursor,
    present: Present<T>,
    cancellation?: Cancellation,
    lineEvents = false,
  ): Promise<PstnWatch<T>> {
    if (this.closed) throw shuttingDown();
    const channelIds = channels.map((ref) => ref.channel);
    const watch = new PstnWatch(cursor, channelIds, present, this.s.maxQueue, this.hooks, lineEvents);
    // Its channels are all of one project (watch-events.ts); the slot is given back when the watch leaves (detach).
    this.slots.takeOne(channels[0]?.project ?? "");
    this.watches.set(watch, []);
    const joins = channels.map((ref, index) => this.join(watch, ref, index, startOf(start, index)));
    // exactly as long: an array grown by push keeps room for 16 more
    const joined = this.watches.get(watch);
    if (joined !== undefined) this.watches.set(watch, joined.slice());
    cancellation?.onAbort(watch);
    try {
      await Promise.all(joins);
    } catch (e) {
      watch.end();
      throw e;
    }
    watch.moveBase();
    return watch;
  }

  notified(channel: ChannelRef, eventId: string): void {
    this.channels.get(channelKey(channel))?.notified(eventId);
  }

  resubscribed(channels: readonly ChannelRef[]): void {
    for (const ref of channels) void this.channels.get(channelKey(ref))?.read();
  }

  /** Ends every watch as `unavailable` and refuses new ones. */
  close(): void {
    this.closed = true;
    clearInterval(this.sweeper);
    this.stopListening();
    for (const watch of [...this.watches.keys()]) watch.fail(shuttingDown());
  }

  /** Reads every watched channel, `sweepBatch` at a time, then moves the watches' cursors up. */
  async sweep(): Promise<void> {
    if (this.sweeping || this.closed) return;
    this.sweeping = true;
    try {
      const channels = [...this.channels.values()];
      for (let i = 0; i < channels.length; i += this.s.sweepBatch) {
        await Promise.all(channels.slice(i, i + this.s.sweepBatch).map((f) => f.read()));
      }
      for (const watch of this.watches.keys()) watch.moveBase();
    } finally {
      this.sweeping = false;
    }
  }

  private join(watch: PstnWatch<unknown>, ref: ChannelRef, index: number, position: string | undefined): Promise<void> {
    const key = channelKey(ref);
    let channel = this.channels.get(key);
    if (channel === undefined) {
      channel = new WatchedChannel(ref, this.log.notifications.subscribe(ref), this.log, this.s);
      this.channels.set(key, channel);
    }
    const member: WatchedChannelMember = { watch, index, position, joined: false, settle: settledAlready };
    const joined = new Promise<void>((resolve, reject) => {
      member.settle = (failure) => {
        member.settle = settledAlready; // settles once, and keeps nothing of the join (a watch lives long)
        if (failure === undefined) resolve();
        else reject(failure);
      };
    });
    joined.catch(() => {}); // observed by `open`
    channel.members.add(member);
    this.watches.get(watch)?.push({ member, channel });
    void channel.read();
    return joined;
  }

  /** The watch left: its slot is given back, its channels forget it, and a channel nobody watches any more unsubscribes. */
  private detach(watch: PstnWatch<unknown>): void {
    const memberships = this.watches.get(watch);
    if (memberships === undefined) return;
    this.watches.delete(watch);
    // the project its slot was taken for: memberships are made in the order of its channels (open)
    this.slots.giveBack(memberships[0]?.channel.ref.project ?? "");
    for (const { member, channel } of memberships) {
      channel.members.delete(member);
      member.settle(new Failure("unavailable", { detail: "the watch ended" }));
      if (channel.members.size > 0 || this.channels.get(channelKey(channel.ref)) !== channel) continue;
      this.channels.delete(channelKey(channel.ref));
      channel.stop();
      this.log.notifications.unsubscribe(channel.ref);
    }
  }

  /** How far every channel of the watch is delivered: the earliest of its channels' safe positions. */
  private deliveredUpTo(watch: PstnWatch<unknown>): string | undefined {
    const list = this.watches.get(watch);
    if (list === undefined || list.length === 0 || list.some(({ member }) => !member.joined)) return undefined;
    return list.map(({ channel }) => channel.safe).reduce(earlierStreamId);
  }
}

/** A watch's place in one of its channels. */
interface Membership {
  readonly member: WatchedChannelMember;
  readonly channel: WatchedChannel;
}

function settledAlready(): void {}

function startOf(start: WatchStart, index: number): string | undefined {
  return start.kind === "now" ? undefined : (start.positions.get(index) ?? start.base);
}

function channelKey(ref: ChannelRef): string {
  return JSON.stringify([ref.project, ref.channel]);
}

function shuttingDown(): Failure {
  return new Failure("unavailable", { detail: "the server is shutting down; watch again" });
}
