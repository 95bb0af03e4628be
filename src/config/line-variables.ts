/**
 * The phone line's rows of the configuration table (variables.ts, where they
 * take their place after the watches' rows): how long a telephone
 * participant's presence lasts without a report, and how many participants
 * one channel's line holds, and the pace of the demo's telephone-gateway
 * simulator. Kept apart only for the size of variables.ts; the
 * same rules apply (see there).
 */
import type { Variable } from "./variable-kinds.js";

export const LINE_VARIABLES = {
  PSTN_PRESENCE_TTL_SECONDS: {
    kind: "integer",
    default: 60,
    min: 1,
    max: 86_400,
    meaning:
      "how long a telephone participant stays on the line without a report of them (ReportLine, SyncLine): one not reported for longer is marked left within this plus a quarter of it (at most 5 s more), so a crashed gateway leaves no ghost for longer. The gateway re-reports or syncs well within it",
  },
  PSTN_MAX_LINE: {
    kind: "integer",
    default: 5000,
    min: 1,
    max: 5000,
    meaning:
      "participants on one channel's line; a join past it answers `LINE_OUTCOME_LINE_FULL` and adds nobody. At most 5000, the most one SyncLine lists",
  },
  DEMO_PHONE_GATEWAY_MS: {
    kind: "integer",
    default: 2000,
    min: 0,
    max: 600_000,
    meaning:
      "demo mode only: how often a caller of the demo's telephone-gateway simulator does something (a keypad mute, a raised hand, a hang-up); `0` turns the simulator off. Elsewhere it is ignored",
  },
} as const satisfies Record<string, Variable>;
