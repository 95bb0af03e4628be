/**
 * Simulated conversion tasks. A task's progress is a pure function of the time
 * since it was created, computed when asked, so the simulator needs no timers
 * for it (only a task with a webhook has one, for its end: webhooks.ts):
 *
 *   [0, step)                  Waiting     0 pages converted
 *   [k·step, (k+1)·step)       Converting  k-1 pages converted, k = 1..pages
 *   [(pages+1)·step, ∞)        Finished    all pages converted
 *
 * A task whose resource `failWhen` picks turns to Fail where it would have
 * converted its second page (or finished, for a one-page document). A
 * cancelled task stays where it was when cancelled, as Abort. How each API
 * reports a task is in legacy-answer.ts and projector-answer.ts.
 */
import type { ConversionApi, ConversionStatus, ConversionType, Region } from "../../services/ports.js";

export interface SimulatedTaskSpec {
  readonly uuid: string;
  /** The API that created it, the only one that answers about it. */
  readonly api: ConversionApi;
  readonly type: ConversionType;
  readonly resource: string;
  readonly scale?: number;
  /** Whether previews were asked for (dynamic conversions). */
  readonly preview: boolean;
  readonly webhookEndpoint?: string;
  readonly region: Region;
  /** Milliseconds since the epoch. */
  readonly createdAt: number;
  readonly pageCount: number;
  /** Where its converted files are named: FILES_BASE, or the simulator's own `/files` (`serveFiles`). */
  readonly filesBase: string;
  /** Duration of one progress step (long for a slow resource). */
  readonly stepMs: number;
  readonly willFail: boolean;
  /** When it was cancelled (milliseconds since the epoch). */
  readonly abortedAt?: number;
}

/** Where a simulated task stands. */
export interface SimulatedProgress {
  readonly status: ConversionStatus;
  readonly convertedPages: number;
  /** 0–100. */
  readonly percent: number;
}

/** What `tasks()` shows: the spec plus its progress at the time of asking. */
export interface SimulatedTask extends SimulatedTaskSpec {
  readonly state: SimulatedProgress;
  /**
   * When it reaches (or reached) its terminal state — the first instant a query
   * answers Finished, Fail or Abort (milliseconds since the epoch). The bench
   * measures how long boardline takes to pass that on.
   */
  readonly endsAt: number;
}

/** A create the simulator accepted (what `creates()` shows): no token, only a label of its project. */
export interface AcceptedCreate {
  /** When it arrived, on the simulator's clock (the task's `createdAt`). */
  readonly at: number;
  readonly resource: string;
  /** The task it made. */
  readonly uuid: string;
  /** The first 8 hex digits of the SHA-256 of the project's identity (an opaque token, or an access key). */
  readonly project: string;
}

export const SIMULATED_FAILURE_REASON = "simulated conversion failure";
/** The projector API's `errorCode` of a failed simulated task ("unknown error"). */
export const SIMULATED_ERROR_CODE = "2050099";
/** Where the simulated converted files are named by default (never served; see `serveFiles`). */
export const FILES_BASE = "https://convertcdn.example";
export const PAGE_WIDTH = 1280;
export const PAGE_HEIGHT = 720;

export function taskProgress(task: SimulatedTaskSpec, now: number): SimulatedProgress {
  if (task.abortedAt !== undefined) {
    const then = progressAt(task, task.abortedAt);
    return isTerminal(then.status) ? then : { ...then, status: "Abort" };
  }
  return progressAt(task, now);
}

/** The first instant `taskProgress` answers a terminal state (see `SimulatedTask.endsAt`). */
export function taskEndsAt(task: SimulatedTaskSpec): number {
  const steps = task.willFail ? Math.min(2, task.pageCount) + 1 : task.pageCount + 1;
  const naturalEnd = task.createdAt + steps * task.stepMs;
  return task.abortedAt === undefined ? naturalEnd : Math.min(naturalEnd, Math.max(task.createdAt, task.abortedAt));
}

export function isTerminal(status: ConversionStatus): boolean {
  return status === "Finished" || status === "Fail" || status === "Abort";
}

/** When the task reaches Finished or Fail unless cancelled first (ms since the epoch). */
export function endsAt(task: SimulatedTaskSpec): number {
  const steps = task.willFail ? Math.min(2, task.pageCount) + 1 : task.pageCount + 1;
  return task.createdAt + steps * task.stepMs;
}

function progressAt(task: SimulatedTaskSpec, at: number): SimulatedProgress {
  const pages = task.pageCount;
  const step = Math.max(0, Math.floor((at - task.createdAt) / task.stepMs));
  const failAt = Math.min(2, pages);
  const converted = (count: number) => ({ convertedPages: count, percent: Math.round((count / pages) * 100) });

  if (task.willFail && step > failAt) return { status: "Fail", ...converted(failAt - 1) };
  if (step === 0) return { status: "Waiting", ...converted(0) };
  if (step <= pages) return { status: "Converting", ...converted(step - 1) };
  return { status: "Finished", ...converted(pages) };
}

/** The URL of a converted static page, or the `pptx://` name of a dynamic one. */
export function pageFileUrl(task: SimulatedTaskSpec, page: number): string {
  return task.type === "static"
    ? `${task.filesBase}/staticConvert/${task.uuid}/${page}.png`
    : `${task.filesBase.replace(/^https?:/, "pptx:")}/dynamicConvert/${task.uuid}/${page}.slide`;
}

/** The preview image of a dynamic page. */
export function previewUrl(task: SimulatedTaskSpec, page: number): string {
  return `${task.filesBase}/dynamicConvert/${task.uuid}/preview/${page}.png`;
}
