/**
 * One watched channel in the watch hub: its subscription, its watches (each
 * at its own position until it has caught up), and the reads that channel them.
 * Reads of a channel never overlap: a read asked for while one runs makes that
 * one go round again, so a burst of notifications costs one or two reads, and
 * each watch gets the channel's events once each, in the stream's order.
 */
import { Failure } from "../failure.js";
import type { ChannelRef, PstnEventLog, PstnEventPage } from "../ports.js";
import type { PstnWatch } from "./watch.js";
import { compareStreamIds, earlierStreamId, laterStreamId, positionBefore, STREAM_START } from "./stream-ids.js";

export interface WatchedChannelSettings {
  /** Events read per round trip. */
  readonly pageSize: number;
  /**
   * How far a Redis clock may step back without a watch losing events
   * (docs/architecture.md, "Watching mute events"): a read at time T
   * vouches only for events before T minus this.
   */
  readonly clockToleranceMs: number;
  /** First wait before reading a channel again after a failed read (doubles, up to `maxRetryMs`). */
  readonly retryMs: number;
  readonly maxRetryMs: number;
}

/** A watch on this channel. */
export interface WatchedChannelMember {
  readonly watch: PstnWatch<unknown>;
  /** The channel's index in the watch's watch. */
  readonly index: number;
  /** Delivered up to here; undefined: from the stream's end, not known until the first read. */
  position: string | undefined;
  /** Whether a read that included it has ended (it has caught up). */
  joined: boolean;
  /** Settles the member's join: undefined once caught up, or why it cannot be. */
  settle(failure?: unknown): void;
}

/** Members a read hands events to before it lets the event loop turn (their events go out meanwhile). */
const MEMBERS_PER_TURN = 100;

function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export const TRIMMED_AWAY =
  "the events after this cursor were trimmed away: take a new snapshot (GetPstnState) and watch from its as_of_event_id";

export class WatchedChannel {
  readonly members = new Set<WatchedChannelMember>();
  /** Every member is delivered up to here (after the last complete read), or undefined before it. */
  private through: string | undefined;
  /** Every member is delivered up to here, and no event up to here can still come. */
  safe = STREAM_START;
  private reading: Promise<void> | undefined;
  private again = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private failures = 0;
  private stopped = false;

  constructor(
    readonly ref: ChannelRef,
    private readonly subscription: Promise<void>,
    private readonly log: PstnEventLog,
    private readonly s: WatchedChannelSettings,
  ) {
    subscription.catch(() => {}); // observed by the first read
  }

  /** Reads the channel now, or again right after the read under way; resolves when that read is done. */
  read(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.reading !== undefined) {
      this.again = true;
      return this.reading;
    }
    this.reading = this.rounds().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  /** The channel has an event with this id: read it unless every member has it already. */
  notified(eventId: string): void {
    if (this.through !== undefined && this.reading === undefined && compareStreamIds(eventId, this.through) <= 0)
      return;
    void this.read();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.retryTimer);
  }

  private async rounds(): Promise<void> {
    try {
      await this.subscription;
    } catch (e) {
      for (const m of this.members) m.settle(e);
      return;
    }
    do {
      this.again = false;
      try {
        await this.readOnce();
        this.failures = 0;
      } catch (e) {
        this.failed(e);
        return;
      }
    } while (this.again && !this.stopped);
  }

  /** One read of the channel, page by page to its end, for the members there are now. */
  private async readOnce(): Promise<void> {
    const members = [...this.members];
    const known = members.flatMap((m) => (m.position === undefined ? [] : [m.position]));
    let after = known.length === 0 ? undefined : known.reduce(earlierStreamId);
    for (;;) {
      const page = await this.log.readEvents(this.ref, after, this.s.pageSize);
      await this.deliver(members, page);
      if (page.complete) return this.caughtUp(members, page);
      after = page.through;
    }
  }

  /**
   * Hands the page's events to the members, `MEMBERS_PER_TURN` members at a
   * time with a turn of the event loop between them: the first members' events
   * go out on the wire while the next are served, rather than all at the end.
   * Each member still gets the events in order (reads do not overlap).
   */
  private async deliver(members: readonly WatchedChannelMember[], page: PstnEventPage): Promise<void> {
    for (const m of members) {
      if (m.position !== undefined && compareStreamIds(m.position, page.lostBefore) < 0 && this.members.has(m)) {
        const gone = new Failure("out_of_range", { detail: TRIMMED_AWAY });
        this.members.delete(m);
        if (m.joined) m.watch.fail(gone);
        else m.settle(gone);
      }
    }
    for (let from = 0; from < members.length; from += MEMBERS_PER_TURN) {
      if (from > 0 && page.events.length > 0) await nextTurn();
      const turn = members.slice(from, from + MEMBERS_PER_TURN);
      for (const event of page.events) {
        for (const m of turn) {
          if (m.position === undefined || compareStreamIds(event.id, m.position) <= 0 || !this.members.has(m)) continue;
          m.position = event.id;
          m.watch.deliver(m.index, event);
        }
      }
      for (const m of turn) if (m.position !== undefined) m.position = laterStreamId(m.position, page.through);
    }
  }

  private caughtUp(members: readonly WatchedChannelMember[], page: PstnEventPage): void {
    for (const m of members) {
      if (m.position === undefined) {
        m.position = page.through;
        m.watch.started(m.index, page.through);
      }
    }
    this.through = page.through;
    // Every member now has every event up to `through`; events not written yet get ids from the
    // store's clock, so none can come before the read's time (less the tolerance for clocks stepping back).
    this.safe = laterStreamId(
      this.safe,
      laterStreamId(page.through, positionBefore(page.now - this.s.clockToleranceMs)),
    );
    for (const m of members) {
      if (m.joined) continue;
      m.joined = true;
      m.settle();
    }
  }

  /** A read failed: members still joining learn it; the others wait for a read that works. */
  private failed(e: unknown): void {
    for (const m of this.members) if (!m.joined) m.settle(e);
    if (this.stopped) return;
    this.failures++;
    const delay = Math.min(this.s.retryMs * 2 ** (this.failures - 1), this.s.maxRetryMs);
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => void this.read(), delay);
    this.retryTimer.unref();
  }
}
