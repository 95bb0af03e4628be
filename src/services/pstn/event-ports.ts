/**
 * What watching mute events needs from the store (re-exported by ports.ts,
 * where `Store.pstnEvents` offers it): reading a channel's events after a
 * position, and being told that a channel has a new one. docs/architecture.md,
 * "Watching mute events", says how the watch hub combines them.
 */

import type { LinePolicy, MuteSetter } from "./snapshot.js";

/** What a line event is; a mute change when absent (as every event was before the line had others). */
export type LineEventKind = "join" | "leave" | "hand" | "policy" | "mute_all";

/** Why a participant left the line. */
export type LeaveReason = "reported" | "sync" | "lease";

/**
 * One entry of a channel's event stream: a mute change, or (with `kind`) an
 * event of the line. `mute` is always the participant's mute state after it
 * (for the channel-wide kinds, `policy` and `mute_all`, whose `uid` is "",
 * the state mute-all set).
 */
export interface MuteEvent {
  readonly id: string;
  readonly uid: string;
  readonly mute: boolean;
  readonly by: string;
  readonly at: number;
  readonly kind?: LineEventKind;
  /** What set the mute state (absent: the host). */
  readonly setter?: MuteSetter;
  /** A mute change made by MuteAll. */
  readonly all?: boolean;
  readonly callerId?: string;
  /** The hand after a `hand` event. */
  readonly hand?: boolean;
  /** The policy after a `policy` event. */
  readonly policy?: LinePolicy;
  /** Participants changed by a `mute_all`. */
  readonly changed?: number;
  readonly reason?: LeaveReason;
}

/** A channel of a project. */
export interface ChannelRef {
  readonly project: string;
  readonly channel: string;
}

/** One read of a channel's events (`PstnEventLog.readEvents`). */
export interface PstnEventPage {
  /** The events after the position, oldest first (entries other writers got wrong are skipped). */
  readonly events: readonly MuteEvent[];
  /**
   * Where the next read starts: the id of the last entry read (skipped ones
   * included), else the position read after. For a read of the tail (no
   * position): the id of the stream's newest entry ever ("0-0": none).
   */
  readonly through: string;
  /** Whether the read reached the stream's end (else read again after `through`). */
  readonly complete: boolean;
  /**
   * A reader whose position is before this id has lost events: they were
   * trimmed away (or deleted) before it read them. "0-0": nothing ever was.
   * It may say so for a position right at the newest trimmed event too (the
   * store cannot always tell): never the other way round.
   */
  readonly lostBefore: string;
  /**
   * The store's clock at the read, in ms (Redis: `TIME` of the node holding
   * the channel, the clock its new event ids come from).
   */
  readonly now: number;
}

/** Being told that watched channels have new events; one per store, shared by its watch hubs. */
export interface PstnNotifications {
  /** Adds a listener of every subscribed channel's notifications; the function it answers removes it. */
  listen(listener: PstnNotificationListener): () => void;
  /**
   * Subscribes to a channel's notifications (counted: each `subscribe` needs
   * its `unsubscribe`). Resolves once the subscription is active: every event
   * written after that is notified. Throws `Failure("unavailable")` when it
   * cannot be made.
   */
  subscribe(channel: ChannelRef): Promise<void>;
  unsubscribe(channel: ChannelRef): void;
}

export interface PstnNotificationListener {
  /** The channel has a new event (at least this id). */
  notified(channel: ChannelRef, eventId: string): void;
  /**
   * The subscriptions of these channels were lost (the connection dropped)
   * and are active again: events written in between were not notified, so
   * read the channels again.
   */
  resubscribed(channels: readonly ChannelRef[]): void;
}

/** The channels' mute event streams, for watching them. */
export interface PstnEventLog {
  /**
   * Up to `count` events of the channel after position `after` (exclusive),
   * oldest first; with `after` undefined, none: only where the stream ends
   * (`through`), to watch from there.
   */
  readEvents(channel: ChannelRef, after: string | undefined, count: number): Promise<PstnEventPage>;
  readonly notifications: PstnNotifications;
}
