/**
 * The watches' rows of the configuration table (variables.ts, where they take
 * their place after CONVERSION_WEBHOOK_SECRET): how many watch streams one
 * instance keeps open, how many of them one project may hold, and how many
 * channels one watch may name. Kept apart only for the size of variables.ts;
 * the same rules apply (see there). The rule that ties the share to
 * MAX_WATCHES is in load-config.ts.
 */
import type { Variable } from "./variable-kinds.js";

/** A project's share when MAX_WATCHES_PER_PROJECT is not set: a quarter of MAX_WATCHES, rounded up. */
export function defaultWatchShare(maxWatches: number): number {
  return Math.ceil(maxWatches / 4);
}

export const WATCH_VARIABLES = {
  MAX_WATCHES: {
    kind: "integer",
    default: 10_000,
    min: 1,
    max: 1_000_000,
    meaning:
      "watch streams open at once on one instance (WatchConversion and WatchPstnEvents together); past it → 429; also the most stream openings that wait their turn to open (64 open at a time), past which one is refused at once (429, `Retry-After`) rather than queued",
  },
  MAX_WATCHES_PER_PROJECT: {
    kind: "integer",
    default: 2_500,
    defaultNote: "a quarter of `MAX_WATCHES`, rounded up (`2500`)",
    min: 1,
    max: 1_000_000,
    meaning:
      "of those, the most one project may hold on one instance; past it → 429 for that project only, while others still open theirs. The default leaves three quarters of an instance to the other projects whatever one of them does, and still lets one project watch 2.5 million channels per instance (`MAX_WATCH_CHANNELS` each); it counts per instance, so behind N instances a project holds up to N shares. At most `MAX_WATCHES`",
  },
  MAX_WATCH_CHANNELS: {
    kind: "integer",
    default: 1000,
    min: 1,
    max: 100_000,
    meaning: "channels one WatchPstnEvents may name; more → 429 / RESOURCE_EXHAUSTED (split them over several watches)",
  },
} as const satisfies Record<string, Variable>;
