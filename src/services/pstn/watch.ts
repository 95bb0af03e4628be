/**
 * One open mute-event watch, as its client iterates it: the events the watch
 * hub hands it wait in a queue until the client takes them, each with the
 * cursor of the watch after it (src/services/pstn/cursor.ts), and go out as
 * the caller's value of an event (`Present`). It is a plain async iterator
 * rather than a generator, so `return()` (the client went away) ends it at
 * once even while it waits for the next event; and it hands events to a
 * taker (`nextTo`) as well as through promises, so a transport can wait for
 * hours holding nothing but itself.
 *
 * A client that does not keep up is not followed forever: past `maxQueue`
 * waiting events the watch ends as `unavailable`, and the client resumes from
 * the last cursor it got, missing nothing.
 */
import { Failure } from "../failure.js";
import type { MuteEvent } from "../ports.js";
import type { NextTaker, PushIterator } from "../push-stream.js";
import type { WatchCursor } from "./cursor.js";

/** The caller's value of an event: of channel `channelId`, with the watch's cursor after it. A module's function, not a closure: a watch lives long. */
export type Present<T> = (channelId: string, event: MuteEvent, cursor: string) => T;

/** The hub's side of its watches (one object for them all: a watch lives long, and holds no closures of its own). */
export interface WatchHooks {
  /** Where every channel of the watch is delivered up to, as far as the hub knows; undefined when not known. */
  deliveredUpTo(watch: PstnWatch<unknown>): string | undefined;
  /** The watch ended (however): leave the hub and give the watch's slot back. Called once per watch. */
  detach(watch: PstnWatch<unknown>): void;
}

interface Queued {
  readonly index: number;
  readonly event: MuteEvent;
}

const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined };
/** A queue with nothing in it (an array that was pushed to keeps room for 16 more). */
const EMPTY: readonly Queued[] = [];

export class PstnWatch<T> implements PushIterator<T>, AsyncIterableIterator<T> {
  private queue: Queued[] = EMPTY as Queued[];
  private head = 0;
  private failure: unknown;
  private ended = false;
  private detached = false;
  private waiting: NextTaker<T> | undefined;
  private raisePending = false;

  constructor(
    private readonly cursor: WatchCursor,
    /** The watch's channel ids, by index. */
    private readonly channelIds: readonly string[],
    private readonly present: Present<T>,
    private readonly maxQueue: number,
    private readonly hooks: WatchHooks,
    /** Whether the line's other events (joins, leaves, hands…) go out too, or only mute changes. */
    private readonly lineEvents: boolean,
  ) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** The hub: an event of channel `index`, in the channel's order. */
  deliver(index: number, event: MuteEvent): void {
    if (this.ended || this.failure !== undefined) return;
    if (event.kind !== undefined && !this.lineEvents) return;
    if (this.queue.length - this.head >= this.maxQueue) {
      this.fail(new Failure("unavailable", { detail: "the watch fell behind; watch again from the last cursor" }));
      return;
    }
    if (this.queue === EMPTY) this.queue = [];
    this.queue.push({ index, event });
    this.flush();
  }

  /** The hub: channel `index` starts at `position` (a watch from now on). */
  started(index: number, position: string): void {
    this.cursor.started(index, position);
  }

  /**
   * The hub learned how far every channel is delivered: the cursor's base
   * moves up now if every queued event was handed out, else once they are.
   */
  moveBase(): void {
    if (this.queue.length > this.head) this.raisePending = true;
    else this.raiseBase();
  }

  /** Ends the watch with `e` (the client gets it after the events already queued). */
  fail(e: unknown): void {
    if (this.ended || this.failure !== undefined) return;
    this.failure = e;
    this.detach();
    this.flush();
  }

  /** Ends the watch quietly (the client went away). */
  end(): void {
    this.ended = true;
    this.detach();
    this.flush();
  }

  next(): Promise<IteratorResult<T>> {
    return new Promise((resolve, reject) => this.nextTo({ took: resolve, failed: reject }));
  }

  /** Hands the next event to `taker` as soon as there is one (or the end, or the failure). */
  nextTo(taker: NextTaker<T>): void {
    if (!this.handOut(taker)) this.waiting = taker;
  }

  return(): Promise<IteratorResult<T>> {
    this.end();
    return Promise.resolve(DONE);
  }

  /** Hands `taker` what is there (an event, the failure, the end) on the next microtask; false when nothing is. */
  private handOut(taker: NextTaker<T>): boolean {
    const item = this.queue[this.head];
    if (item !== undefined) {
      this.take();
      this.cursor.delivered(item.index, item.event.id);
      if (this.raisePending && this.queue.length === this.head) this.raiseBase();
      let value: T;
      try {
        value = this.present(this.channelIds[item.index] as string, item.event, this.cursor.encode());
      } catch (e) {
        queueMicrotask(() => taker.failed(e)); // the caller's failure, not the hub's that delivered it
        return true;
      }
      queueMicrotask(() => taker.took({ done: false, value }));
      return true;
    }
    if (this.failure !== undefined && !this.ended) {
      this.ended = true;
      const failure = this.failure;
      queueMicrotask(() => taker.failed(failure));
      return true;
    }
    if (!this.ended) return false;
    queueMicrotask(() => taker.took(DONE));
    return true;
  }

  private take(): void {
    this.queue[this.head] = undefined as never;
    this.head++;
    if (this.head === this.queue.length) {
      this.queue = EMPTY as Queued[];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
  }

  private raiseBase(): void {
    this.raisePending = false;
    const upTo = this.hooks.deliveredUpTo(this);
    if (upTo !== undefined) this.cursor.raise(upTo);
  }

  private detach(): void {
    if (this.detached) return;
    this.detached = true;
    this.hooks.detach(this);
  }

  /** Something came (an event, the end, a failure): a taker waiting gets it. */
  private flush(): void {
    const waiting = this.waiting;
    if (waiting !== undefined && this.handOut(waiting)) this.waiting = undefined;
  }
}
