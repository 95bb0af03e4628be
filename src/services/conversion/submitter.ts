/**
 * Submits each project's queued conversion requests to the backend at the
 * project's pace — `conversion_qps` a second (its whiteboard settings; 1 by
 * default) across every instance — so no request bounces off the backend's
 * limit. Transport-free, like every service. docs/conversion-queue.md has the
 * whole picture.
 *
 * Each instance runs one submitter beside its follower. The queues wait in the
 * store's index of queues; a submitter claims a due queue under a lease (so
 * one instance at a time takes a project's turns), takes one turn — the head
 * of the queue, when the project's pace allows — and gives the queue back, due
 * again at its next turn. If the instance dies, the lease runs out and another
 * claims the queue.
 *
 * A request is never submitted twice once its backend uuid is recorded, and
 * never dropped: the head leaves its queue only after its uuid is recorded (or
 * it ended: cancelled, or refused by the backend as invalid). The backend
 * takes no idempotency key, so one window remains: an instance dying while the
 * backend makes the task, before the answer is recorded. The next attempt
 * submits the request again (it is marked as attempted, so that is visible),
 * rather than lose it.
 *
 * The backend over its capacity (429, "too many tasks") puts the turn back:
 * the head stays at the head, and the project's next turn waits the backend's
 * Retry-After. Other trouble (unavailable, time-outs, our credentials refused)
 * is retried the same way until the request is `followMs` old, then it ends as
 * Fail, "timeout".
 */
import { Failure } from "../failure.js";
import type { ConversionBackend, ConversionTaskRecord, Store, WhiteboardSettings } from "../ports.js";
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

/**
 * What a submission came to: the backend took it; refused it for its
 * capacity (the request stays at the head); rejected it (the request ends as
 * Fail); or something else went wrong (tried again later).
 */
export type SubmissionOutcome = "ok" | "over_capacity" | "rejected" | "error";

/** A pace a little longer than 1 s / qps: the requests' trips to the backend vary, and its limit is strict. */
const PACE_MARGIN = 1.03;
/** How long a turn waits after trouble other than the backend's refusal. */
const TROUBLE_WAIT_MS = 2_000;
/** Turns under way at once at most, on one instance. */
const MAX_TURNS = 64;

/** The time between two submissions of a project that the backend takes `qps` a second from. */
export function paceMs(qps: number | undefined): number {
  const rate = qps !== undefined && qps > 0 ? qps : 1;
  return Math.ceil((1000 / rate) * PACE_MARGIN);
}

export class ConversionSubmitter {
  private timer: NodeJS.Timeout | undefined;
  /** When the timer fires (ms): a wake for a sooner time replaces it. */
  private timerAt = Number.POSITIVE_INFINITY;
  /** When queues are due again, not reached yet: a look finds only the queues due by then. */
  private readonly dueAts = new Set<number>();
  private claiming: Promise<void> | undefined;
  private again = false;
  private readonly turns = new Set<Promise<void>>();
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

  /** One turn of a claimed queue; the queue is given back due at its next turn. */
  private async turn(project: string): Promise<void> {
    const { store, owner } = this.o;
    const queue = store.conversionQueue;
    const started = this.now();
    let nextAt = started + TROUBLE_WAIT_MS;
    try {
      const whiteboard = await store.getWhiteboard(project);
      const pace = paceMs(whiteboard?.conversionQps);
      const turn = await queue.takeTurn(project, owner, pace);
      if (turn.kind === "lost") return;
      if (turn.kind === "empty") nextAt = started;
      else if (turn.kind === "wait") nextAt = started + turn.ms;
      else {
        const waitMs = await this.submit(project, turn.uuid, whiteboard);
        nextAt = started + Math.max(pace, waitMs);
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

  /**
   * Submits the head of the queue; answers how long the project's next turn
   * must wait at least (0: a pace). A head that needs no submission gives its
   * turn back.
   */
  private async submit(project: string, uuid: string, whiteboard: WhiteboardSettings | undefined): Promise<number> {
    const { store, settings } = this.o;
    const queue = store.conversionQueue;
    const at = this.now();
    const mark = await queue.markSubmitting(uuid, at);
    if (mark !== "marked") {
      if (mark === "submitted") await queue.followSubmitted(uuid, at + settings.firstPollMs);
      if (mark === "ended") await queue.finishEnded(uuid);
      else await queue.dequeue(project, uuid);
      await queue.giveBackTurn(project);
      return 0;
    }
    const task = await queue.getQueuedTask(uuid);
    if (task?.request === undefined) {
      await this.fail(uuid, "the request could not be read", at);
      return 0;
    }
    if (whiteboard === undefined) return this.retryOrTimeOut(task, at);
    const told = (outcome: SubmissionOutcome) =>
      this.o.onSubmission?.(outcome, Math.max(0, this.now() - task.createdAt));
    try {
      await this.send(task, whiteboard);
      told("ok");
      return 0;
    } catch (e) {
      if (e instanceof Failure && e.kind === "unavailable" && e.retryAfterSeconds !== undefined) {
        told("over_capacity");
        const holdMs = e.retryAfterSeconds * 1000;
        await queue.holdTurns(project, holdMs);
        return holdMs;
      }
      if (e instanceof Failure && e.kind === "invalid") {
        told("rejected");
        await this.fail(uuid, "the conversion backend rejected the request", at);
        return 0;
      }
      told("error");
      this.o.onTrouble(project, e);
      return this.retryOrTimeOut(task, at);
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
  private async retryOrTimeOut(task: ConversionTaskRecord, at: number): Promise<number> {
    if (at - task.createdAt < this.o.settings.followMs) return TROUBLE_WAIT_MS;
    await this.fail(task.uuid, "timeout", at);
    return 0;
  }

  private async fail(uuid: string, reason: string, at: number): Promise<void> {
    await this.o.store.conversionQueue.endQueued(
      uuid,
      { status: "Fail", percent: 0, pages: [], failedReason: reason },
      at,
    );
  }
}
