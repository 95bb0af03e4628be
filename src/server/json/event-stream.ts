/**
 * A server-streaming call on a JSON route, as server-sent events
 * (`text/event-stream`): one `data:` line per message — the same JSON a unary
 * route answers — after an `id:` line when the method says how a client
 * resumes (`ServedStream.resume`: the id a client sends back as
 * `Last-Event-ID`), a comment line every 15 s so proxies keep the connection
 * open, an `event: error` carrying the error table's body if the stream fails
 * after it started, and the end of the response when the stream ends. The
 * headers go out at once: a watch may wait long for its first event.
 *
 * Backpressure: the next message is taken only once the socket has room
 * (`drain`, raced against `close`), so the messages a client does not read
 * wait in the stream's own bounded queue — where a watch that falls too far
 * behind is ended as documented — and not in the socket's unbounded buffer.
 * A stream that ends with its client still not reading is destroyed
 * `UNTAKEN_ANSWER_MS` later, as HTTP/2's guard resets an answer not taken.
 */
import { type DescMessage, type MessageShape, toJsonString } from "@bufbuild/protobuf";
import { encodedOnce } from "../call/encoded-once.js";
import { toJsonError } from "../call/error-table.js";
import type { NodeResponse } from "../http/request-answer.js";

const KEEP_ALIVE_MS = 15_000;
/** How long a finished stream may wait for a client that does not read its end (the README's 10 s). */
export const UNTAKEN_ANSWER_MS = 10_000;

/** Resolves when `res` can take more (or is gone). */
function drained(res: NodeResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}

/** One message as an event: its `id:` line (when the method says how to resume) and its `data:` line; made once per message. */
const eventText = encodedOnce(
  <O extends DescMessage>(message: MessageShape<O>, output: O, eventId?: (message: MessageShape<O>) => string) => {
    const id = eventId === undefined ? "" : `id: ${eventId(message)}\n`;
    return `${id}data: ${toJsonString(output, message, { useProtoFieldName: true, alwaysEmitImplicit: true })}\n\n`;
  },
);

export async function writeEventStream<O extends DescMessage>(
  res: NodeResponse,
  output: O,
  messages: AsyncIterable<MessageShape<O>>,
  eventId?: (message: MessageShape<O>) => string,
): Promise<void> {
  // Both response kinds write strings alike; their overloads just do not unify in the types.
  const write = (text: string) => (res as { write(chunk: string): boolean }).write(text);
  res.writeHead(200, {
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-store",
    "x-accel-buffering": "no", // nginx: pass each event on at once
  });
  if ("flushHeaders" in res) res.flushHeaders();
  const keepAlive = setInterval(() => write(": keep-alive\n\n"), KEEP_ALIVE_MS);
  keepAlive.unref();
  try {
    for await (const message of messages) {
      if (res.destroyed) break;
      if (!write(eventText(message, output, eventId))) await drained(res);
    }
  } catch (e) {
    if (!res.destroyed) write(`event: error\ndata: ${toJsonError(e).body}\n\n`);
  } finally {
    clearInterval(keepAlive);
    res.end();
    if (!res.writableFinished && !res.destroyed) {
      const untaken = setTimeout(() => res.destroy(), UNTAKEN_ANSWER_MS);
      untaken.unref();
      res.once("close", () => clearTimeout(untaken));
    }
  }
}
