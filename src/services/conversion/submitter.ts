/**
 * Submits each project's queued conversion requests to the backend at the
 * project's pace — `conversion_qps` a second (its whiteboard settings; 1 by
 * default) across every instance — so no request bounces off the backend's
 * limit. Transport-free, like every service; docs/conversion-queue.md has the
 * whole picture, crashes included.
 *
 * Each instance runs one submitter beside its follower. A submitter claims a
 * due queue under a lease (one instance at a time takes a project's turns),
 * takes its turns — the head, when the project's pace allows — and gives it
 * back, due at its next turn; a dead instance's lease runs out and another
 * claims the queue. The head leaves its queue only after its backend uuid is
 * recorded (or it ended), so no accepted request is dropped, and none with a
 * recorded uuid is submitted again. The backend over its capacity (429, "too
 * many tasks") holds the project's turns back by its Retry-After, the head
 * staying at the head; other trouble is retried likewise until the request is
 * `followMs` old, then it ends as Fail, "timeout".
 */
import type { Store } from "../ports.js";
import type { FollowerSettings } from "./follower.js";
import { paceMs } from "./pace.js";
import { type HeadSubmission, submitHead, TROUBLE_WAIT_MS } from "./submit-head.js";

export interface SubmitterOptions extends HeadSubmission {
  readonly settings: FollowerSettings;
  /** Who holds the leases this submitter takes (unique per instance). */
  readonly owner: string;
}

/** Queues whose turns are taken at once at most, on one instance. */
const MAX_TURNS = 64;
/** Submissions of one project under way at once at most: its pace × the backend's answer time needs fewer. */
const MAX_SUBMISSIONS = 16;

export class ConversionSubmitter {
  private timer: NodeJS.Timeout | undefined;
  /** When the timer fires (ms): a wake for a sooner time replaces it. */
  private timerAt = Number.POSITIVE_INFINITY;
  /** When queues are due again, not reached yet: a look finds only the queues due by then. */
  private readonly dueAts = new Set<number>();
  private claiming: Promise<void> | undefined;
  private again = false;
  private readonly turns = new Set<Promise<void>>();
  /** Turns awaiting their queue's next turn: a stop ends the wait. */
  private readonly pauses = new Set<() => void>();
  private running = false;
  private readonly now: () => number;

  constructor(private readonly o: SubmitterOptions) {
    this.now = o.now ?? Date.now;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.schedule(this.now());
  }

  /** Looks for due queues now (a request was accepted), after the look under way if there is one. */
  wake(): void {
    if (!this.running) return;
    this.again = true;
    this.look();
  }

  async stop(): Promise<void> {
    this.running = false;
    clearTimeout(this.timer);
    this.timer = undefined;
    for (const done of [...this.pauses]) done();
    await this.claiming;
    await Promise.all(this.turns);
  }

  /** One look, for the tests' own clock: claims the due queues and waits for their turns. Never throws. */
  async tick(): Promise<void> {
    await Promise.all(await this.claim());
  }

  /** The next look at `at` (ms), or at the tick's, whichever is sooner; the tick at a random point around it. */
  private schedule(at: number): void {
    if (Number.isFinite(at)) this.dueAts.add(at);
    const tick = this.now() + this.o.settings.tickMs * (0.5 + Math.random());
    const next = Math.min(at, tick);
    if (this.timer !== undefined && this.timerAt <= next) return;
    clearTimeout(this.timer);
    this.timerAt = next;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Number.POSITIVE_INFINITY;
        // A timer may fire a millisecond early by the wall clock: a time not reached yet stays for the next one.
        const now = this.now();
        for (const due of this.dueAts) if (due <= now) this.dueAts.delete(due);
        this.look();
        if (this.running) this.schedule(Math.min(...this.dueAts));
      },
      Math.max(0, next - this.now()),
    );
    this.timer.unref();
  }

  private look(): void {
    if (!this.running) return;
    // A look asked for during a claim runs after it: that claim may have read the queues before they were due.
    this.again = this.claiming !== undefined;
    if (this.again) return;
    this.claiming = this.claim()
      .then(() => undefined)
      .finally(() => {
        this.claiming = undefined;
        if (this.again) this.look();
      });
  }

  private async claim(): Promise<Promise<void>[]> {
    const room = MAX_TURNS - this.turns.size;
    if (room <= 0) {
      this.again = true;
      return [];
    }
    const { store, owner, settings } = this.o;
    let due: Awaited<ReturnType<Store["conversionQueue"]["claimDueQueues"]>>;
    try {
      due = await store.conversionQueue.claimDueQueues(
        this.now(),
        Math.min(room, settings.batch),
        owner,
        settings.leaseMs,
      );
    } catch (e) {
      this.o.onTrouble("*", e);
      return [];
    }
    if (due.length === Math.min(room, settings.batch)) this.again = true;
    return due.map(({ project }) => {
      const turn = this.turn(project).finally(() => {
        this.turns.delete(turn);
        if (this.again) this.look();
      });
      this.turns.add(turn);
      return turn;
    });
  }

  /**
   * The turns of a claimed queue: each turn starts the submission of the
   * first task not under way, without waiting for the backend's answer (a
   * project's pace is not bound by how fast the backend answers), up to
   * MAX_SUBMISSIONS at once. While the next turn comes within a quarter lease
   * the queue is kept and its turn awaited here, to the millisecond (a claim
   * of a queue due later would come a tick late). Then, every submission
   * ended, the queue is given back, due at its next turn; a quarter lease and
   * the backend's deadline end well within the lease, so no other instance
   * takes a task while it is being submitted here.
   */
  private async turn(project: string): Promise<void> {
    const { store, owner, settings } = this.o;
    const queue = store.conversionQueue;
    const keepUntil = this.now() + settings.leaseMs / 4;
    const underWay = new Map<string, Promise<void>>();
    let nextAt = this.now() + TROUBLE_WAIT_MS;
    let lost = false;
    try {
      const whiteboard = await store.getWhiteboard(project);
      const pace = paceMs(whiteboard?.conversionQps);
      for (;;) {
        if (underWay.size >= MAX_SUBMISSIONS) {
          await Promise.race(underWay.values());
          continue;
        }
        const turn = await queue.takeTurn(project, owner, pace, [...underWay.keys()]);
        const now = this.now();
        if (turn.kind === "lost") {
          lost = true;
          break;
        }
        if (turn.kind === "empty" && underWay.size === 0) {
          nextAt = now;
          break;
        }
        if (turn.kind === "empty" || turn.kind === "busy") {
          // The queue is kept while submissions are under way: a request that comes meanwhile has its turn here.
          await Promise.race([...underWay.values(), this.pause(pace)]);
          continue;
        }
        if (turn.kind === "wait") {
          nextAt = now + turn.ms;
          if (!this.running || nextAt > keepUntil) break;
          await this.pause(turn.ms);
          continue;
        }
        const { uuid } = turn;
        const submission = submitHead(this.o, project, uuid, whiteboard)
          .catch((e: unknown) => this.o.onTrouble(project, e))
          .finally(() => underWay.delete(uuid));
        underWay.set(uuid, submission);
      }
    } catch (e) {
      this.o.onTrouble(project, e);
    }
    await Promise.all(underWay.values());
    if (lost) return;
    try {
      await queue.releaseQueue(project, owner, nextAt);
      this.schedule(nextAt);
    } catch (e) {
      this.o.onTrouble(project, e); // the lease runs out, and the queue is due again then
    }
  }

  /** Waits `ms`, or less when the submitter stops. */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.pauses.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.pauses.add(done);
    });
  }
}
