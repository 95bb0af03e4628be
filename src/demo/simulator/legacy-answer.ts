/**
 * How the legacy API reports a simulated task:
 * `{uuid, type, status, failedReason?, progress: {totalPageSize, convertedPageSize,
 * convertedPercentage, convertedFileList: [{width, height, conversionFileUrl, preview?}], currentStep?}}`.
 */
import type {
  ConversionProgress,
  ConversionTaskStatus,
  ConvertedFile,
  TaskStatus,
} from "../../netless/legacy-shapes.js";
import {
  PAGE_HEIGHT,
  PAGE_WIDTH,
  pageFileUrl,
  previewUrl,
  SIMULATED_FAILURE_REASON,
  type SimulatedProgress,
  type SimulatedTaskSpec,
} from "./tasks.js";

export function legacyAnswer(task: SimulatedTaskSpec, state: SimulatedProgress): ConversionTaskStatus {
  // The legacy API has no cancel, so its tasks never reach Abort; were one to, it reads as a failure.
  const status: TaskStatus = state.status === "Abort" ? "Fail" : state.status;
  const base = { uuid: task.uuid, type: task.type, status };
  if (status === "Fail") {
    return { ...base, failedReason: SIMULATED_FAILURE_REASON, progress: progress(task, state, "Extracting") };
  }
  if (status === "Waiting") return { ...base, progress: progress(task, state, undefined) };
  return { ...base, progress: progress(task, state, status === "Finished" ? "Packaging" : "Extracting") };
}

function progress(task: SimulatedTaskSpec, state: SimulatedProgress, step: string | undefined): ConversionProgress {
  const files: ConvertedFile[] = [];
  for (let page = 1; page <= state.convertedPages; page++) {
    const withPreview = task.type === "dynamic" && task.preview;
    files.push({
      width: PAGE_WIDTH,
      height: PAGE_HEIGHT,
      conversionFileUrl: pageFileUrl(task, page),
      ...(withPreview ? { preview: previewUrl(task, page) } : {}),
    });
  }
  return {
    totalPageSize: task.pageCount,
    convertedPageSize: state.convertedPages,
    convertedPercentage: state.percent,
    convertedFileList: files,
    // Like the real API, only dynamic conversions report a step.
    ...(task.type === "dynamic" && step !== undefined ? { currentStep: step } : {}),
  };
}
