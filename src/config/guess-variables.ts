/**
 * The guessing limit's rows of the configuration table (variables.ts, where
 * they take their place after SHUTDOWN_GRACE_MS): how many wrong passphrases,
 * in what window, and how long a caller that proved a passphrase takes no
 * guess for it. Kept apart only for the size of variables.ts; the same rules
 * apply (see there).
 */
import type { Variable } from "./variable-kinds.js";

export const GUESS_VARIABLES = {
  GUESS_LIMIT: {
    kind: "integer",
    default: 10,
    min: 0,
    max: 1_000_000,
    meaning:
      "wrong passphrases per caller (project + `sub`) in any window of `GUESS_WINDOW_SECONDS` (a sliding window; beyond it 429); `0` disables (a call takes a guess in one Redis round trip, in parallel with the passphrase lookup, and a right passphrase gives it back beside its own write)",
  },
  GUESS_WINDOW_SECONDS: {
    kind: "integer",
    default: 60,
    min: 1,
    max: 86_400,
    meaning: "the sliding window `GUESS_LIMIT` counts in: a guess counts for this long from when it was taken",
  },
  GUESS_PROVEN_SECONDS: {
    kind: "integer",
    default: 600,
    min: 0,
    max: 86_400,
    meaning:
      "a caller whose call with a passphrase was right takes no guess for its calls with that passphrase until this long after its last right one, so its calls in flight are never capped by `GUESS_LIMIT` (each instance remembers up to 10 000 callers and sha256 of passphrases, never a passphrase); a refused one counts as a miss and ends it; `0` disables",
  },
} as const satisfies Record<string, Variable>;
