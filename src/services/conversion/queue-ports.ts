/**
 * The conversion queue's half of the ports: each project's requests wait in
 * the store, in the order they came, until the project's turn at the backend
 * (which takes a few requests a second from a project). The submitters of
 * every instance share the queues under leases, as the followers share the
 * due tasks (docs/conversion-queue.md).
 */
import type { ConversionApi, ConversionState, ConversionTaskRecord } from "./ports.js";

/** What accepting a request did. */
export type EnqueueOutcome =
  /** At the tail of its project's queue: `position` from 1. */
  | { readonly kind: "queued"; readonly position: number }
  /** An identical request's task answers for it (it is not queued again). */
  | { readonly kind: "reused"; readonly uuid: string }
  /** The queue holds `length` tasks, its limit: nothing was written. */
  | { readonly kind: "full"; readonly length: number };

export interface EnqueueOptions {
  /** Names the request within its project (a digest of URL, type and scale): the reuse index's entry. */
  readonly reuseKey: string;
  /** Answer the task the reuse index names, when there is one (other than `replacing`). */
  readonly reuse: boolean;
  /** A task the index names that must not answer again (it failed, or is gone): this one replaces it. */
  readonly replacing?: string;
  /** How many tasks the project's queue holds at most. */
  readonly max: number;
}

/** What the head of a project's queue may do now. */
export type QueueTurn =
  /** The project's turn: submit `uuid`. Its next turn is a pace later. */
  | { readonly kind: "submit"; readonly uuid: string }
  /** Not the project's turn for `ms` more. */
  | { readonly kind: "wait"; readonly ms: number }
  /** Every task at the head is being submitted already (by the caller). */
  | { readonly kind: "busy" }
  | { readonly kind: "empty" }
  /** The lease on the queue is not ours any more (it ran out). */
  | { readonly kind: "lost" };

/** A project whose queue a submitter claimed, and when it was due (ms). */
export interface DueQueue {
  readonly project: string;
  readonly dueAt: number;
}

/**
 * What marking a queued task as being submitted found: "marked" (submit it),
 * "submitted" (an earlier attempt recorded the backend's uuid: do not submit
 * again), "ended" (cancelled while queued) or "gone" (no record).
 */
export type SubmissionMark = "marked" | "submitted" | "ended" | "gone";

/** The backend's answer to a submission. */
export interface Submission {
  readonly backendUuid: string;
  readonly api: ConversionApi;
  readonly status: string;
  /** Milliseconds since the epoch. */
  readonly at: number;
  /** The follower first polls the task then (ms). */
  readonly firstPollAt: number;
}

/**
 * What a submission came to: the backend took it; refused it for its
 * capacity (the request stays at the head); rejected it (the request ends as
 * Fail); or something else went wrong (tried again later).
 */
export type SubmissionOutcome = "ok" | "over_capacity" | "rejected" | "error";

/** What recording a submission found: recorded, or the task was cancelled meanwhile (its uuid is kept), or gone. */
export type SubmissionRecord = "recorded" | "cancelled" | "gone";

export interface ConversionQueueStore {
  /**
   * Accepts a request: the task's record (status Queued, with its request)
   * first, then its place at the tail of its project's queue, in one step
   * with the reuse index (unless that names a task to reuse, or the queue is
   * full: then the record is removed again and nothing stays).
   */
  enqueueConversion(task: ConversionTaskRecord, options: EnqueueOptions): Promise<EnqueueOutcome>;
  /** The task's record with its queued request (when it still has one and it opens). */
  getQueuedTask(uuid: string): Promise<ConversionTaskRecord | undefined>;
  /** The task's place in its project's queue, from 1; undefined when it is not queued. */
  queuePosition(project: string, uuid: string): Promise<number | undefined>;
  /** How many tasks the project's queue holds. */
  queueLength(project: string): Promise<number>;
  /** Up to `max` projects whose queue is due at `now`, each now leased to `owner` for `leaseMs`. */
  claimDueQueues(now: number, max: number, owner: string, leaseMs: number): Promise<DueQueue[]>;
  /**
   * The first task of the project's queue not in `inFlight` (those the
   * caller is submitting), when it is the project's turn and `owner` holds the
   * queue's lease; the project's next turn is then `paceMs` later, whichever
   * instance takes it.
   */
  takeTurn(project: string, owner: string, paceMs: number, inFlight?: readonly string[]): Promise<QueueTurn>;
  /** Holds the project's next turn back at least `ms` (the backend is over its capacity). */
  holdTurns(project: string, ms: number): Promise<void>;
  /** The project's next turn may come at once: the turn taken for `uuid` submitted nothing (unless a later turn was taken since). */
  giveBackTurn(project: string, uuid: string): Promise<void>;
  /** Marks a queued task as being submitted (one more attempt), unless it has ended or been submitted. */
  markSubmitting(uuid: string, at: number): Promise<SubmissionMark>;
  /**
   * Saves the backend's uuid and the task's first state, drops the request,
   * and makes the task due for its first poll; a task cancelled meanwhile
   * keeps its end and only gains the uuid ("cancelled").
   */
  recordSubmission(uuid: string, submission: Submission): Promise<SubmissionRecord>;
  /** Makes a submitted task due for a poll at `at` unless it is due already (a submission recorded before a crash). */
  followSubmitted(uuid: string, at: number): Promise<void>;
  /** Takes the task out of its project's queue. */
  dequeue(project: string, uuid: string): Promise<void>;
  /** Ends `owner`'s lease on the project's queue: due again at `nextAt`, or not at all when it is empty. */
  releaseQueue(project: string, owner: string, nextAt: number): Promise<void>;
  /**
   * Ends a task that is still queued (cancelled: Abort; refused by the
   * backend: Fail), announces its end and takes it out of its queue;
   * "not-queued" (nothing written) when it is no longer queued.
   */
  endQueued(uuid: string, state: ConversionState, at: number): Promise<"ended" | "not-queued">;
  /** Announces a queued task's end and takes it out of its queue, again (a step an earlier attempt may have missed). */
  finishEnded(uuid: string): Promise<void>;
}
