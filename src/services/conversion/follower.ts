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
 * within `leaseMs` + `tickMs`. A task not ended after `followMs` is saved as
 * Fail, reason "timeout".
 *
 * Backend trouble while polling (unavailable, time-outs, unreadable answers)
 * is not the task's failure: the poll is retried later. Only the backend
 * saying so (or not knowing the task any more) ends a task.
 */
import {
  type ConversionBackend,
  type ConversionState,
  type ConversionTaskRecord,
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
}

export const DEFAULT_FOLLOWER_SETTINGS: FollowerSettings = {
  firstPollMs: 1_500,
  maxPollMs: 5_000,
  followMs: 10 * 60_000,
  leaseMs: 15_000,
  tickMs: 500,
  batch: 50,
};

export interface FollowerOptions {
  readonly store: Store;
  readonly backend: ConversionBackend;
  readonly settings: FollowerSettings;
  /** Who holds the leases this follower takes (unique per instance). */
  readonly owner: string;
  /** Told of every poll that went wrong (for the logs); never of a secret. */
  readonly onTrouble: (uuid: string, error: unknown) => void;
  readonly now?: () => number;
}

export function isTerminal(status: string): boolean {
  return (TERMINAL_CONVERSION_STATUSES as readonly string[]).includes(status);
}

export class ConversionFollower {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** A wake came during a look: look again right after it. */
  private again = false;
  private readonly now: () => number;

  constructor(private readonly o: FollowerOptions) {
    this.now = o.now ?? Date.now;
  }

  /** Looks for due tasks every `tickMs` until `stop`. */
  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => this.look(), this.o.settings.tickMs);
    this.timer.unref();
  }

  /**
   * Looks for due tasks now rather than at the next tick (a webhook made a task
   * due); right after the look under way, if there is one. Nothing once stopped.
   */
  wake(): void {
    if (this.timer === undefined) return;
    if (this.running === undefined) this.look();
    else this.again = true;
  }

  /** Stops looking and waits for the polls under way. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    this.again = false;
    await this.running;
  }

  /** One look unless one is under way; then another when a wake came meanwhile. */
  private look(): void {
    this.running ??= this.tick().finally(() => {
      this.running = undefined;
      if (this.again && this.timer !== undefined) {
        this.again = false;
        this.look();
      }
    });
  }

  /** One look: claims the due tasks and polls each. Never throws. */
  async tick(): Promise<void> {
    let due: string[];
    try {
      due = await this.o.store.conversions.claimDueConversions(
        this.now(),
        this.o.settings.batch,
        this.o.owner,
        this.o.settings.leaseMs,
      );
    } catch (e) {
      this.o.onTrouble("*", e);
      return;
    }
    await Promise.all(due.map((uuid) => this.poll(uuid)));
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
      else await store.conversions.saveConversionState(uuid, owner, state, now, next);
    } catch (e) {
      this.o.onTrouble(uuid, e);
      // The lease runs out and the task, still due, is polled again later.
    }
  }

  /** The task's state now; undefined when it cannot be learnt this time (try later). */
  private async learn(record: ConversionTaskRecord): Promise<ConversionState | undefined> {
    if (isTerminal(record.status)) return stateOf(record); // saved but maybe not announced yet
    if (this.now() - record.createdAt >= this.o.settings.followMs) {
      return { ...stateOf(record), status: "Fail", failedReason: "timeout" };
    }
    const whiteboard = await this.o.store.getWhiteboard(record.project);
    if (whiteboard === undefined) return undefined; // the project's settings went away; keep trying until followMs
    try {
      return await this.o.backend.queryTask({
        uuid: record.uuid,
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
    return Math.min(maxPollMs, Math.max(firstPollMs, (now - record.createdAt) / 2));
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
