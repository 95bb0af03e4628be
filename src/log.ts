import { pino, type Logger } from "pino";

export type { Logger };

/**
 * Structured JSON logs on stdout (pino: fast, well kept, and its redaction keeps
 * secrets out even when a whole object is logged by mistake).
 */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      base: { service: "boardline" },
      redact: {
        paths: [
          "authorization",
          "*.authorization",
          "headers.authorization",
          "passphrase",
          "*.passphrase",
          "token",
          "*.token",
          "secret",
          "*.secret",
          "secretKey",
          "*.secretKey",
          "sdkToken",
          "*.sdkToken",
        ],
        censor: "[redacted]",
      },
    },
    destination ?? process.stdout,
  );
}

/** A logger that drops everything (tests that do not look at logs). */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}

/**
 * `log`, called at most once per `ms` (a storm of one condition neither floods the log nor goes
 * unseen), told how many calls were passed over since it last ran.
 */
export function atMostOncePer<A extends unknown[]>(
  ms: number,
  log: (passedOver: number, ...args: A) => void,
): (...args: A) => void {
  let loggedAt = Number.NEGATIVE_INFINITY;
  let passedOver = 0;
  return (...args) => {
    const now = performance.now();
    if (now - loggedAt < ms) {
      passedOver++;
      return;
    }
    log(passedOver, ...args);
    loggedAt = now;
    passedOver = 0;
  };
}
