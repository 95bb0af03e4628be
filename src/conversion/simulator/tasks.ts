/**
 * Simulated conversion tasks. A task's state is a pure function of the time
 * since it was created, computed when asked, so the simulator needs no timers
 * (nothing to leak, nothing keeping a test process alive):
 *
 *   [0, step)                  Waiting     0 pages converted
 *   [k·step, (k+1)·step)       Converting  k-1 pages converted, k = 1..pages
 *   [(pages+1)·step, ∞)        Finished    all pages converted
 *
 * A task whose resource `failWhen` picks turns to Fail where it would have
 * converted its second page (or finished, for a one-page document).
 */
import type { ConversionType, Region } from "../../services/ports.js";
import type { ConversionProgress, ConversionTaskStatus, ConvertedFile } from "../task-shapes.js";

export interface SimulatedTaskSpec {
  readonly uuid: string;
  readonly type: ConversionType;
  readonly resource: string;
  readonly scale?: number;
  readonly region: Region;
  /** Milliseconds since the epoch. */
  readonly createdAt: number;
  readonly pageCount: number;
  readonly willFail: boolean;
}

/** What `tasks()` shows: the spec plus the state at the time of asking. */
export interface SimulatedTask extends SimulatedTaskSpec {
  readonly state: ConversionTaskStatus;
}

export const SIMULATED_FAILURE_REASON = "simulated conversion failure";

/** Where the simulated converted files would live (never served). */
const FILES_BASE = "https://conversion-simulator.invalid";

export function taskState(task: SimulatedTaskSpec, now: number, stepMs: number): ConversionTaskStatus {
  const pages = task.pageCount;
  const step = Math.max(0, Math.floor((now - task.createdAt) / stepMs));
  const failAt = Math.min(2, pages);
  const base = { uuid: task.uuid, type: task.type };

  if (task.willFail && step > failAt) {
    return {
      ...base,
      status: "Fail",
      failedReason: SIMULATED_FAILURE_REASON,
      progress: progress(task, failAt - 1, "Extracting"),
    };
  }
  if (step === 0) return { ...base, status: "Waiting", progress: progress(task, 0, undefined) };
  if (step <= pages) return { ...base, status: "Converting", progress: progress(task, step - 1, "Extracting") };
  return { ...base, status: "Finished", progress: progress(task, pages, "Packaging") };
}

function progress(task: SimulatedTaskSpec, converted: number, step: string | undefined): ConversionProgress {
  const files: ConvertedFile[] = [];
  for (let page = 1; page <= converted; page++) {
    files.push({ width: 1280, height: 720, conversionFileUrl: fileUrl(task, page) });
  }
  return {
    totalPageSize: task.pageCount,
    convertedPageSize: converted,
    convertedPercentage: Math.round((converted / task.pageCount) * 100),
    convertedFileList: files,
    // Like the real API, only dynamic conversions report a step.
    ...(task.type === "dynamic" && step !== undefined ? { currentStep: step } : {}),
  };
}

function fileUrl(task: SimulatedTaskSpec, page: number): string {
  return task.type === "static"
    ? `${FILES_BASE}/staticConvert/${task.uuid}/${page}.png`
    : `${FILES_BASE}/dynamicConvert/${task.uuid}/slide/slide${page}.xml`;
}
