/** A real pino logger (debug level) whose output a test can read back. */
import { Writable } from "node:stream";
import { createLogger, type Logger } from "../../src/log.js";

/** The logger, its output as parsed JSON lines, and as text. */
export function capturingLogger(): { logger: Logger; lines: () => Record<string, unknown>[]; text: () => string } {
  const chunks: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString("utf8"));
      done();
    },
  });
  const logger = createLogger("debug", sink);
  const text = (): string => chunks.join("");
  const lines = (): Record<string, unknown>[] =>
    text()
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { logger, lines, text };
}
