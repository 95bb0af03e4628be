/**
 * How the projector API reports a simulated task: `{uuid, type, status,
 * convertedPercentage, pageCount, prefix (dynamic), images (static), previews
 * (dynamic, when asked for), note (when Finished), errorCode/errorMessage (Fail)}`.
 * A failed task has no pages, page count or results, as the docs say.
 */
import {
  PAGE_HEIGHT,
  PAGE_WIDTH,
  pageFileUrl,
  previewUrl,
  SIMULATED_ERROR_CODE,
  SIMULATED_FAILURE_REASON,
  type SimulatedProgress,
  type SimulatedTaskSpec,
} from "./tasks.js";

export function projectorAnswer(task: SimulatedTaskSpec, state: SimulatedProgress): Record<string, unknown> {
  const base = { uuid: task.uuid, type: task.type, status: state.status, convertedPercentage: state.percent };
  if (state.status === "Fail") {
    return { ...base, errorCode: SIMULATED_ERROR_CODE, errorMessage: SIMULATED_FAILURE_REASON };
  }
  const pages = Array.from({ length: state.convertedPages }, (_, i) => i + 1);
  const results =
    task.type === "static"
      ? { images: byPage(pages, (page) => ({ width: PAGE_WIDTH, height: PAGE_HEIGHT, url: pageFileUrl(task, page) })) }
      : {
          prefix: `${task.filesBase}/dynamicConvert`,
          ...(task.preview ? { previews: byPage(pages, (page) => previewUrl(task, page)) } : {}),
        };
  return {
    ...base,
    pageCount: task.pageCount,
    ...results,
    ...(state.status === "Finished" ? { note: `${task.filesBase}/${task.type}Convert/${task.uuid}/note.json` } : {}),
  };
}

/** `{"1": …, "2": …}`. */
function byPage<T>(pages: readonly number[], make: (page: number) => T): Record<string, T> {
  return Object.fromEntries(pages.map((page) => [String(page), make(page)]));
}
