/**
 * One open mute-event watch, as its client iterates it: the events the watch
 * hub hands it wait in a queue until the client takes them, each with the
 * cursor of the watch after it (src/services/pstn/cursor.ts). It is a plain async iterator
 * rather than a generator, so `return()` (the client went away) ends it at
 * once even while it waits for the next event.
 *
 * A client that does not keep up is not followed forever: past `maxQueue`
 * waiting events the watch ends as `unavailable`, and the client resumes from
 * the last cursor it got, missing nothing.
 */
import { Failure } from "../failure.js";
import type { MuteEvent } from "../ports.js";
import type { WatchCursor } from "./cursor.js";

/** An event handed to the client: its channel (index in the watch), the event, and where the watch stands after it. */
export interface WatchedEvent {
  readonly index: number;
  readonly event: MuteEvent;
  readonly cursor: string;
}

/** The hub's side of its watches (one object for them all: a watch lives long, and holds no closures of its own). */
export interface WatchHooks {
  /** Where every channel of the watch is delivered up to, as far as the hub knows; undefined when not known. */
  deliveredUpTo(watch: PstnWatch): string | undefined;
  /** The watch ended (however): leave the hub and give the watch's slot back. Called once per watch. */
  detach(watch: PstnWatch): void;
}

interface Waiting {
  resolve(result: IteratorResult<WatchedEvent>): void;
  reject(e: unknown): void;
}

export class PstnWatch implements AsyncIterableIterator<WatchedEvent> {
  private queue: Array<{ readonly index: number; readonly event: MuteEvent }> = [];
  private head = 0;
  private failure: unknown;
  private ended = false;
  private detached = false;
  private waiting: Waiting | undefined;
  private raisePending = false;

  constructor(
    private readonly cursor: WatchCursor,
    private readonly maxQueue: number,
    private readonly hooks: WatchHooks,
  ) {}

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** The hub: an event of channel `index`, in the channel's order. */
  deliver(index: number, event: MuteEvent): void {
    if (this.ended || this.failure !== undefined) return;
    if (this.queue.length - this.head >= this.maxQueue) {
      this.fail(new Failure("unavailable", { detail: "the watch fell behind; watch again from the last cursor" }));
      return;
    }
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

  next(): Promise<IteratorResult<WatchedEvent>> {
    const item = this.queue[this.head];
    if (item !== undefined) {
      this.take();
      this.cursor.delivered(item.index, item.event.id);
      if (this.raisePending && this.queue.length === this.head) this.raiseBase();
      return Promise.resolve({ done: false, value: { ...item, cursor: this.cursor.encode() } });
    }
    if (this.failure !== undefined && !this.ended) {
      this.ended = true;
      return Promise.reject(this.failure);
    }
    if (this.ended) return Promise.resolve({ done: true, value: undefined });
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
    });
  }

  return(): Promise<IteratorResult<WatchedEvent>> {
    this.end();
    return Promise.resolve({ done: true, value: undefined });
  }

  private take(): void {
    this.queue[this.head] = undefined as never;
    this.head++;
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
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

  private flush(): void {
    const waiting = this.waiting;
    if (waiting === undefined) return;
    if (this.queue.length === this.head && this.failure === undefined && !this.ended) return;
    this.waiting = undefined;
    this.next().then(waiting.resolve, waiting.reject);
  }
}
