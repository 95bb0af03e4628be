/**
 * Follows every conversion task boardline created until it ends (Finished,
 * Fail or Abort), so its result is kept and announced whether or not the
 * backend calls back: a conversion webhook only makes a task due sooner and
 * wakes the follower (src/services/conversion/webhooks.ts). Transport-free, like every service.
 *
 * Each instance runs one follower. Tasks wait in the store's due index; a
 * follower claims the due ones under a lease (so exactly one instance polls
 * a task at a time), asks the backend, saves what it learnt, and makes the
 * task due again later — sooner while it is young, at most every `maxPollMs`
 * — or, at a terminal state, lets it go. If the instance holding a lease
 * dies, the lease expires and another instance claims the task: a takeover
 * within `leaseMs` + `tickMs`. A task not ended `followMs` after its
 * submission is saved as Fail, reason "timeout". A task still queued is not
 * followed: the submitter (submitter.ts) makes it due once submitted.
 *
 * The claim rate follows the due backlog: a look claims up to `batch` tasks
 * and polls them without waiting for one another; a look that found a full
 * batch is followed by another at once, and each poll's end makes room for
 * the next claim, up to `maxInFlight` polls under way. So an instance polls
 * as fast as the backend answers, not `batch` per `tickMs`; the tick only
 * finds the tasks that came due while nothing was backlogged. Instances that
 * share the due index each claim as they have room, so they share its load.
 *
 * Backend trouble while polling (unavailable, time-outs, unreadable answers)
 * is not the task's failure: the poll is retried later. Only the backend
 * saying so (or not knowing the task any more) ends a task.
 */
import {
  type ConversionBackend,
  type ConversionState,
  type ConversionTaskRecord,
  type DueConversion,
  type Store,
  TERMINAL_CONVERSION_STATUSES,
} from "../ports.js";

export interface FollowerSettings {
  /** The first poll comes this long after the task was created. */
  readonly firstPollMs: number;
  /** Polls come at most this far apart. */
  readonly maxPollMs: number;
  /** A task not ended after this long is saved as Fail, "timeout". */
  readonly followMs: number;
  /** How long a claim on a task lasts without renewal. */
  readonly leaseMs: number;
  /** How often the follower looks for due tasks. */
  readonly tickMs: number;
  /** How many due tasks one look claims at most. */
  readonly batch: number;
  /** Polls under way at once at most (CONVERSION_MAX_POLLS): the claim rate follows the backlog up to this. */
  readonly maxInFlight: number;
  /** Requests one project's queue holds at most (CONVERSION_QUEUE_MAX). */
  readonly queueMax: number;
}

export const DEFAULT_FOLLOWER_SETTINGS: FollowerSettings = {
  firstPollMs: 1_500,
  maxPollMs: 5_000,
  followMs: 10 * 60_000,
  leaseMs: 15_000,
  tickMs: 500,
  batch: 50,
  maxInFlight: 256,
  queueMax: 1_000,
};

export interface FollowerOptions {
  readonly store: Store;
  readonly backend: ConversionBackend;
  readonly settings: FollowerSettings;
  /** Who holds the leases this follower takes (unique per instance). */
  readonly owner: string;
  /** Told of every poll that went wrong (for the logs); never of a secret. */
  readonly onTrouble: (uuid: string, error: unknown) => void;
  /** Told of every poll as it begins: how late (ms) after the task was due (for the metrics). */
  readonly onPoll?: (lateMs: number) => void;
  /** Told of every task this follower saved Finished: how long (ms) since it was accepted (for the metrics). */
  readonly onFinished?: (sinceAcceptedMs: number) => void;
  readonly now?: () => number;
}

/** How many times as often the follower looks while its looks find due tasks. */
const BUSY_TICKS = 10;

export function isTerminal(status: string): boolean {
  return (TERMINAL_CONVERSION_STATUSES as readonly string[]).includes(status);
}

export class ConversionFollower {
  private timer: NodeJS.Timeout | undefined;
  /** The claim under way: one at a time, so two looks never race for one batch. */
  private claiming: Promise<void> | undefined;
  /** Look again as soon as there is room: a wake came, or the last look found a full batch. */
  private again = false;
  /** The polls under way, claimed by any look. */
  private readonly polls = new Set<Promise<void>>();
  /** Tasks the looks since the last tick claimed. */
  private found = 0;
  /** Ticks since one whose looks claimed tasks. */
  private sinceFound = Number.POSITIVE_INFINITY;
  private readonly now: () => number;

  constructor(private readonly o: FollowerOptions) {
    this.now = o.now ?? Date.now;
  }

  /**
   * Looks for due tasks every `tickMs` (on average) until `stop`; BUSY_TICKS times as often while
   * its looks find tasks, and for BUSY_TICKS × 5 looks after the last that did.
   */
  start(): void {
    if (this.timer !== undefined) return;
    // Each tick comes at a random point of [½, 1½] × the mean after the last: the instances sharing a due
    // index do not keep one order, so each claims its share of what comes due between looks. A look takes
    // all that is due, so what one instance gets is what came due since anyone's last look: while tasks
    // come due, the looks come more often, so each takes less and the shares even out (and the polls
    // begin sooner after their due time). Busy stays on for a while after the last find: another
    // instance's look may have just taken what was due, and an instance that went back to the slow
    // tick at once would lose its share.
    const tick = () => {
      this.sinceFound = this.found > 0 ? 0 : this.sinceFound + 1;
      this.found = 0;
      const busy = this.sinceFound < BUSY_TICKS * 5;
      const mean = busy ? this.o.settings.tickMs / BUSY_TICKS : this.o.settings.tickMs;
      this.timer = setTimeout(
        () => {
          tick();
          this.look();
        },
        mean * (0.5 + Math.random()),
      );
      this.timer.unref();
    };
    tick();
  }

  /**
   * Looks for due tasks now rather than at the next tick (a webhook made a task
   * due); right after the look under way, if there is one. Nothing once stopped.
   */
  wake(): void {
    if (this.timer === undefined) return;
    this.again = true;
    this.look();
  }

  /** Stops looking and waits for the claim and the polls under way. */
  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.again = false;
    await this.claiming;
    await Promise.all(this.polls);
  }

  /** One claim for as many tasks as there is room for, unless one is under way; its polls run on their own. */
  private look(): void {
    if (this.timer === undefined || this.claiming !== undefined) return;
    const room = this.room();
    if (room === 0) {
      this.again = true; // the next poll to end looks again
      return;
    }
    this.again = false;
    this.claiming = this.claim(room)
      .then(() => undefined)
      .finally(() => {
        this.claiming = undefined;
        if (this.again) this.look();
      });
  }

  /** One look, for the tests' own clock: claims the due tasks and waits for their polls. Never throws. */
  async tick(): Promise<void> {
    await Promise.all(await this.claim(this.room()));
  }

  private room(): number {
    return Math.max(0, Math.min(this.o.settings.batch, this.o.settings.maxInFlight - this.polls.size));
  }

  /** Claims up to `room` due tasks and starts polling each; a full batch asks for another look. */
  private async claim(room: number): Promise<Promise<void>[]> {
    if (room === 0) return [];
    let due: DueConversion[];
    try {
      due = await this.o.store.conversions.claimDueConversions(this.now(), room, this.o.owner, this.o.settings.leaseMs);
    } catch (e) {
      this.o.onTrouble("*", e);
      return [];
    }
    this.found += due.length;
    if (due.length === room) this.again = true;
    const now = this.now();
    return due.map(({ uuid, dueAt }) => {
      this.o.onPoll?.(Math.max(0, now - dueAt));
      const poll = this.poll(uuid).finally(() => {
        this.polls.delete(poll);
        if (this.again) this.look();
      });
      this.polls.add(poll);
      return poll;
    });
  }

  private async poll(uuid: string): Promise<void> {
    const { store, owner } = this.o;
    try {
      const record = await store.conversions.getConversion(uuid);
      if (record === undefined) return; // gone (expired or deleted); its claim lapses with the lease
      const state = await this.learn(record);
      const now = this.now();
      const next = state === undefined || !isTerminal(state.status) ? now + this.delay(record, now) : undefined;
      if (state === undefined) await store.conversions.rescheduleConversion(uuid, owner, next as number);
      else if ((await store.conversions.saveConversionState(uuid, owner, state, now, next)) === "changed") {
        if (state.status === "Finished" && record.status !== "Finished") this.o.onFinished?.(now - record.createdAt);
      }
    } catch (e) {
      this.o.onTrouble(uuid, e);
      // The lease runs out and the task, still due, is polled again later.
    }
  }

  /** The task's state now; undefined when it cannot be learnt this time (try later). */
  private async learn(record: ConversionTaskRecord): Promise<ConversionState | undefined> {
    if (isTerminal(record.status)) return stateOf(record); // saved but maybe not announced yet
    if (this.now() - (record.submittedAt ?? record.createdAt) >= this.o.settings.followMs) {
      return { ...stateOf(record), status: "Fail", failedReason: "timeout" };
    }
    const whiteboard = await this.o.store.getWhiteboard(record.project);
    if (whiteboard === undefined) return undefined; // the project's settings went away; keep trying until followMs
    try {
      return await this.o.backend.queryTask({
        uuid: record.backendUuid ?? record.uuid,
        type: record.type,
        api: record.api,
        region: whiteboard.region,
        credentials: whiteboard.credentials,
      });
    } catch (e) {
      this.o.onTrouble(record.uuid, e);
      return undefined;
    }
  }

  /** Polls come at half the task's age apart: soon while it is young, then every `maxPollMs`. */
  private delay(record: ConversionTaskRecord, now: number): number {
    const { firstPollMs, maxPollMs } = this.o.settings;
    return Math.min(maxPollMs, Math.max(firstPollMs, (now - (record.submittedAt ?? record.createdAt)) / 2));
  }
}

/** A record's state, as the follower would save it. */
export function stateOf(record: ConversionTaskRecord): ConversionState {
  return {
    status: record.status as ConversionState["status"],
    percent: record.percent,
    pages: record.pages,
    ...(record.pageCount === undefined ? {} : { pageCount: record.pageCount }),
    ...(record.prefix === undefined ? {} : { prefix: record.prefix }),
    ...(record.failedReason === undefined ? {} : { failedReason: record.failedReason }),
  };
}
