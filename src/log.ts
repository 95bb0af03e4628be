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
      // The redaction paths do not reach into a serialized error: this serializer leaves out what must not show.
      serializers: { err: errWithoutCommandArguments },
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

/**
 * pino's error serializer, without a Redis command's arguments: ioredis hangs
 * the failed command on its errors (`command.args`: key names, which carry
 * passphrase hashes, and values), and the store scrubs those it sees; this
 * keeps any other from being logged whole.
 */
function errWithoutCommandArguments(e: Error): unknown {
  const serialized = pino.stdSerializers.err(e) as unknown as { command?: unknown };
  const command = serialized.command;
  if (typeof command === "object" && command !== null) {
    serialized.command = { name: (command as { name?: unknown }).name };
  }
  return serialized;
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
