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
      // Redaction paths do not reach into a serialized error; this serializer leaves out what must not show there.
      serializers: { err: serializeError },
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
 * pino's error serializer, with each Redis command by its name only. ioredis
 * hangs the failed command on its errors, `command: { name, args }` (and on
 * each of an aborted transaction's `previousErrors`); the arguments are key
 * names, which carry the sha256 of passphrases and callers, and record values.
 * Only the logged copy changes: the error itself goes on to the code that
 * classifies it (an outage answers 503), which must see it as ioredis made it.
 */
export function serializeError(value: unknown): unknown {
  return withCommandNames(pino.stdSerializers.err(value as Error), 0);
}

/** Past this depth a logged error's contents are left out (nothing there is worth a cycle). */
const MAX_ERROR_DEPTH = 8;

/**
 * `value` as it is to be logged, with every `command` object shown as its
 * name: a copy, made without writing to anything it was given.
 */
function withCommandNames(value: unknown, depth: number): unknown {
  if (typeof value !== "object" || value === null) return value;
  if (depth > MAX_ERROR_DEPTH) return "[too deep]";
  if (value instanceof Error) return withCommandNames(pino.stdSerializers.err(value), depth);
  if (Array.isArray(value)) return value.map((item) => withCommandNames(item, depth + 1));
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") return value;
  const fields = value as Record<string, unknown>;
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(fields)) {
    const field = fields[key];
    copy[key] =
      key === "command"
        ? (commandName(field) ?? withCommandNames(field, depth + 1))
        : withCommandNames(field, depth + 1);
  }
  return copy;
}

/** The name of an ioredis command (`{ name, args }`), or undefined for anything else. */
function commandName(command: unknown): string | undefined {
  if (typeof command !== "object" || command === null) return undefined;
  const name = (command as { name?: unknown }).name;
  return typeof name === "string" ? name : undefined;
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
