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
