/** A project's pace at the conversion backend: how far apart its submissions come. */

/** A little longer than 1 s / qps: the requests' trips to the backend vary, and its limit is strict. */
const PACE_MARGIN = 1.03;

/** The time (ms) between two submissions of a project that the backend takes `qps` a second from (absent: 1). */
export function paceMs(qps: number | undefined): number {
  const rate = qps !== undefined && qps > 0 ? qps : 1;
  return Math.ceil((1000 / rate) * PACE_MARGIN);
}
