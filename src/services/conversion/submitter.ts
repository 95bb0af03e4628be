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
import { Failure } from "../failure.js";
import type {
  ConversionBackend,
  ConversionTaskRecord,
  Store,
  SubmissionOutcome,
  WhiteboardSettings,
} from "../ports.js";
import { paceMs } from "./pace.js";
import type { FollowerSettings } from "./follower.js";
import type { ConversionWebhooks } from "./webhooks.js";

export interface SubmitterOptions {
  readonly store: Store;
  readonly backend: ConversionBackend;
  readonly settings: FollowerSettings;
  /** Who holds the leases this submitter takes (unique per instance). */
  readonly owner: string;
  /** With CONVERSION_WEBHOOK_BASE: each projector task gets a webhook of its own. */
  readonly webhooks?: Pick<ConversionWebhooks, "issue"> | undefined;
  /** Told of every turn that went wrong (for the logs); never of a secret. */
  readonly onTrouble: (project: string, error: unknown) => void;
  /** Told of every submission: its outcome, and how long (ms) the request had waited since it was accepted. */
  readonly onSubmission?: (outcome: SubmissionOutcome, waitMs: number) => void;
  readonly now?: () => number;
}

/** How long a turn waits after trouble other than the backend's refusal. */
const TROUBLE_WAIT_MS = 2_000;
/** Turns under way at once at most, on one instance. */
const MAX_TURNS = 64;

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
   * The turns of a claimed queue: the head is submitted, and while the next
   * turn comes within half a lease the queue is kept and its turn awaited
   * here, to the millisecond (a claim of a queue due later would come a tick
   * late). Then the queue is given back, due at its next turn.
   */
  private async turn(project: string): Promise<void> {
    const { store, owner, settings } = this.o;
    const queue = store.conversionQueue;
    const keepUntil = this.now() + settings.leaseMs / 2;
    let nextAt = this.now() + TROUBLE_WAIT_MS;
    try {
      const whiteboard = await store.getWhiteboard(project);
      const pace = paceMs(whiteboard?.conversionQps);
      for (;;) {
        const turn = await queue.takeTurn(project, owner, pace);
        const now = this.now();
        if (turn.kind === "lost") return;
        if (turn.kind === "empty") {
          nextAt = now;
          break;
        }
        if (turn.kind === "wait") {
          nextAt = now + turn.ms;
          if (!this.running || nextAt > keepUntil) break;
          await this.pause(turn.ms);
          continue;
        }
        await this.submit(project, turn.uuid, whiteboard);
      }
    } catch (e) {
      this.o.onTrouble(project, e);
    }
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

  /**
   * Submits the head of the queue. A head that needs no submission gives its
   * turn back; one that must wait holds the project's turns back.
   */
  private async submit(project: string, uuid: string, whiteboard: WhiteboardSettings | undefined): Promise<void> {
    const { store, settings } = this.o;
    const queue = store.conversionQueue;
    const at = this.now();
    const mark = await queue.markSubmitting(uuid, at);
    if (mark !== "marked") {
      if (mark === "submitted") await queue.followSubmitted(uuid, at + settings.firstPollMs);
      if (mark === "ended") await queue.finishEnded(uuid);
      else await queue.dequeue(project, uuid);
      await queue.giveBackTurn(project);
      return;
    }
    const task = await queue.getQueuedTask(uuid);
    if (task?.request === undefined) {
      await this.fail(uuid, "the request could not be read", at);
      return;
    }
    if (whiteboard === undefined) {
      await this.retryOrTimeOut(task, at);
      return;
    }
    const told = (outcome: SubmissionOutcome) =>
      this.o.onSubmission?.(outcome, Math.max(0, this.now() - task.createdAt));
    try {
      await this.send(task, whiteboard);
      told("ok");
    } catch (e) {
      if (e instanceof Failure && e.kind === "unavailable" && e.retryAfterSeconds !== undefined) {
        told("over_capacity");
        await queue.holdTurns(project, e.retryAfterSeconds * 1000);
      } else if (e instanceof Failure && e.kind === "invalid") {
        told("rejected");
        await this.fail(uuid, "the conversion backend rejected the request", at);
      } else {
        told("error");
        this.o.onTrouble(project, e);
        await this.retryOrTimeOut(task, at);
      }
    }
  }

  /** Asks the backend for the task, records its uuid, makes it due for its first poll, and takes it out of the queue. */
  private async send(task: ConversionTaskRecord, whiteboard: WhiteboardSettings): Promise<void> {
    const { store, backend, settings, webhooks } = this.o;
    const request = task.request;
    if (request === undefined) throw new TypeError("a queued task carries its request");
    // Mapped before the task exists, so that its first call finds it.
    const webhook = task.api === "projector" ? webhooks?.issue() : undefined;
    if (webhook !== undefined) await store.conversions.recordWebhook(webhook.id, task.uuid);
    const created = await backend.createTask({
      resourceUrl: request.resourceUrl,
      type: task.type,
      ...(request.scale === undefined ? {} : { scale: request.scale }),
      region: whiteboard.region,
      credentials: whiteboard.credentials,
      ...(webhook === undefined ? {} : { webhookEndpoint: webhook.url }),
    });
    const at = this.now();
    const recorded = await store.conversionQueue.recordSubmission(task.uuid, {
      backendUuid: created.uuid,
      api: created.api,
      status: created.status,
      at,
      firstPollAt: at + settings.firstPollMs,
    });
    await store.conversionQueue.dequeue(task.project, task.uuid);
    if (recorded === "cancelled" && created.api === "projector") {
      // Cancelled while it was being submitted: it stays Abort, and the backend need not convert it.
      const ref = { uuid: created.uuid, type: task.type, api: created.api, ...whiteboard };
      await backend.cancelTask(ref).catch((e: unknown) => this.o.onTrouble(task.project, e));
    }
  }

  /** The head stays, and is tried again after a wait, until it is `followMs` old: then it fails. */
  private async retryOrTimeOut(task: ConversionTaskRecord, at: number): Promise<void> {
    if (at - task.createdAt < this.o.settings.followMs)
      await this.o.store.conversionQueue.holdTurns(task.project, TROUBLE_WAIT_MS);
    else await this.fail(task.uuid, "timeout", at);
  }

  private async fail(uuid: string, reason: string, at: number): Promise<void> {
    await this.o.store.conversionQueue.endQueued(
      uuid,
      { status: "Fail", percent: 0, pages: [], failedReason: reason },
      at,
    );
  }
}
