/**
 * A server-streaming call on a JSON route, as server-sent events
 * (`text/event-stream`): one `data:` line per message — the same JSON a unary
 * route answers — after an `id:` line when the method says how a client
 * resumes (`ServedStream.resume`: the id a client sends back as
 * `Last-Event-ID`), a comment line every 15 s so proxies keep the connection
 * open, an `event: error` carrying the error table's body if the stream fails
 * after it started, and the end of the response when the stream ends. The
 * headers go out at once: a watch may wait long for its first event.
 */
import { type DescMessage, type MessageShape, toJsonString } from "@bufbuild/protobuf";
import { toJsonError } from "../call/error-table.js";
import type { NodeResponse } from "../http/request-answer.js";

const KEEP_ALIVE_MS = 15_000;

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
      const id = eventId === undefined ? "" : `id: ${eventId(message)}\n`;
      write(`${id}data: ${toJsonString(output, message, { useProtoFieldName: true, alwaysEmitImplicit: true })}\n\n`);
    }
  } catch (e) {
    if (!res.destroyed) write(`event: error\ndata: ${toJsonError(e).body}\n\n`);
  } finally {
    clearInterval(keepAlive);
    res.end();
  }
}
