/**
 * How many server streams (watches) are being opened at once: at most a few
 * dozen; the others wait their turn, in the order they came.
 *
 * Why: opening a watch is a chain of awaits (authentication, the channel's
 * record, the hub's first read of each channel), and while it is under way
 * every step of that chain is held in memory. When thousands of watches come
 * at once — gateways reconnecting after a deploy — each of them would get to
 * its first await before any got further, so all of those chains would be held
 * at once, outlive the young generation and be promoted to V8's old space,
 * where they die a second later and leave pages of holes behind: every open
 * watch then costs more memory than its own state (docs/performance.md,
 * "Reconnect storm"). Taken in turns, a chain lives and dies young.
 *
 * A turn lasts until the stream is established or refused, not for the
 * watch's life, so the limit is on work under way, never on open watches
 * (those are `MAX_WATCHES`'s). Deadlines and cancellation run as before: the
 * transport arms them when the call comes, so a call may end while it waits.
 *
 * The queue itself is bounded (`maxWaiting`): past it an opening is refused at
 * once, `rate_limited` with a jittered `Retry-After` like a refused watch, so a
 * flood of openings cannot grow the queue, and the memory each waiting call
 * holds, without end. The server bounds it by MAX_WATCHES: a storm in which
 * every watch of a full instance reconnects still waits in the queue whole, and
 * more waiting than watches can be open would only wait to be refused.
 */
import { Failure } from "../../services/failure.js";
import { RETRY_SPREAD_SECONDS } from "../../services/watch-slots.js";

/** Streams opened at once by one instance; enough to keep Redis busy, few enough to die young. */
export const STREAM_OPENINGS_AT_ONCE = 64;

/** Entries taken from the front before the queue is copied down (so taking one stays O(1)). */
const COMPACT_AFTER = 1024;

export class Openings {
  private running = 0;
  private waiting: Array<(() => void) | undefined> = [];
  /** The queue's front: `waiting` before it has been taken. */
  private head = 0;
  /** One function for every turn's end. */
  private readonly finished = () => this.next();

  private refusals = 0;

  constructor(
    readonly atOnce: number = STREAM_OPENINGS_AT_ONCE,
    /** The most that wait their turn; past it an opening is refused at once. */
    readonly maxWaiting: number = Number.POSITIVE_INFINITY,
    /** Told of each refusal, with how many wait (the log, at most once a second). */
    private readonly onRefused: (waiting: number) => void = () => {},
    private readonly random: () => number = Math.random,
  ) {
    if (!(atOnce >= 1)) throw new RangeError("at least one stream must be opened at a time");
    if (!(maxWaiting >= 0)) throw new RangeError("the queue cannot be shorter than empty");
  }

  /** Openings refused so far because the queue was full. */
  get refused(): number {
    return this.refusals;
  }

  /** How many wait for their turn. */
  get queued(): number {
    return this.waiting.length - this.head;
  }

  /**
   * Runs `open` now if fewer than `atOnce` are running, else once its turn comes; settles as `open` does.
   * When `maxWaiting` already wait, `open` never runs: `refused` answers at once (by default, the refusal).
   */
  open<T>(open: () => Promise<T>, refused: (refusal: Failure) => Promise<T> = (r) => Promise.reject(r)): Promise<T> {
    if (this.running < this.atOnce) {
      this.running++;
      return this.run(open);
    }
    if (this.queued >= this.maxWaiting) {
      this.refusals++;
      this.onRefused(this.queued);
      return refused(
        new Failure("rate_limited", {
          detail: "too many watches being opened on this server, retry later",
          retryAfterSeconds: 1 + Math.floor(this.random() * RETRY_SPREAD_SECONDS),
        }),
      );
    }
    return new Promise<void>((turn) => this.waiting.push(turn)).then(() => this.run(open));
  }

  private run<T>(open: () => Promise<T>): Promise<T> {
    let opening: Promise<T>;
    try {
      opening = open();
    } catch (e) {
      this.next();
      return Promise.reject(e);
    }
    opening.then(this.finished, this.finished);
    return opening;
  }

  /** A turn ended: the next in the queue runs (keeping the running count), or one fewer runs. */
  private next(): void {
    if (this.head === this.waiting.length) {
      this.running--;
      return;
    }
    const turn = this.waiting[this.head] as () => void;
    this.waiting[this.head++] = undefined;
    if (this.head === this.waiting.length) {
      this.waiting = [];
      this.head = 0;
    } else if (this.head >= COMPACT_AFTER && this.head * 2 >= this.waiting.length) {
      this.waiting = this.waiting.slice(this.head);
      this.head = 0;
    }
    turn();
  }
}
