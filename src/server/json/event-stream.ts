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
import type { NextTaker, PushIterator } from "../../services/push-stream.js";
import { encodedOnce } from "../call/encoded-once.js";
import { toJsonError } from "../call/error-table.js";
import { returnQuietly } from "../call/reported-stream.js";
import { type NodeResponse, writableAgain } from "../http/request-answer.js";

const KEEP_ALIVE_S = 15;
/** How long a finished stream may wait for a client that does not read its end (docs/api.md, "Telephone gateway integration"). */
export const UNTAKEN_ANSWER_MS = 10_000;

/**
 * The keep-alive comments of every open event stream, from one timer rather than one per stream
 * (a watch lives long, and each timer is an object it holds): a stream joins the slot of the
 * second it opened, and each second the slot whose streams opened a multiple of 15 s ago gets its
 * comment — spread over the seconds as the streams opened, not all at once.
 */
class KeepAlives {
  private readonly slots = Array.from({ length: KEEP_ALIVE_S }, () => new Set<NodeResponse>());
  private at = 0;
  private open = 0;
  private timer: NodeJS.Timeout | undefined;

  add(res: NodeResponse): void {
    (this.slots[this.at] as Set<NodeResponse>).add(res);
    this.open++;
    if (this.timer !== undefined) return;
    this.timer = setInterval(() => this.tick(), 1000);
    this.timer.unref();
  }

  remove(res: NodeResponse): void {
    for (const slot of this.slots) if (slot.delete(res)) this.open--;
    if (this.open > 0 || this.timer === undefined) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private tick(): void {
    this.at = (this.at + 1) % KEEP_ALIVE_S;
    for (const res of this.slots[this.at] as Set<NodeResponse>) {
      if (!res.destroyed) writeText(res, ": keep-alive\n\n"); // a stream whose client just left ends on its own
    }
  }
}

const keepAlives = new KeepAlives();

/** Both response kinds write strings alike; their overloads just do not unify in the types. */
function writeText(res: NodeResponse, text: string): boolean {
  return (res as { write(chunk: string): boolean }).write(text);
}

/** One message as an event: its `id:` line (when the method says how to resume) and its `data:` line; made once per message. */
const eventText = encodedOnce(
  <O extends DescMessage>(message: MessageShape<O>, output: O, eventId?: (message: MessageShape<O>) => string) => {
    const id = eventId === undefined ? "" : `id: ${eventId(message)}\n`;
    return `${id}data: ${toJsonString(output, message, { useProtoFieldName: true, alwaysEmitImplicit: true })}\n\n`;
  },
);

/**
 * Writes the stream as server-sent events and calls `ended` once the response is ended. One object
 * that the stream hands each message to (`nextTo`), rather than an async function's `for await`,
 * and a callback rather than a promise of the end: a watch waits here for hours, and a suspended
 * function, or promises with their reactions up to the request's dispatch, would stay with each
 * watch as long.
 */
export function writeEventStream<O extends DescMessage>(
  res: NodeResponse,
  requestId: string,
  output: O,
  messages: PushIterator<MessageShape<O>>,
  eventId: ((message: MessageShape<O>) => string) | undefined,
  ended: (res: NodeResponse) => void,
): void {
  const writer = new EventStreamWriter(res, output, messages, eventId, ended);
  res.writeHead(200, {
    "x-request-id": requestId, // here, not set ahead: see sayingRequestId
    "content-type": "text/event-stream; charset=utf-8",
    "cache-control": "no-store",
    "x-accel-buffering": "no", // nginx: pass each event on at once
  });
  if ("flushHeaders" in res) res.flushHeaders();
  keepAlives.add(res);
  writer.next();
}

class EventStreamWriter<O extends DescMessage> implements NextTaker<MessageShape<O>> {
  constructor(
    private readonly res: NodeResponse,
    private readonly output: O,
    private readonly it: PushIterator<MessageShape<O>>,
    private readonly eventId: ((message: MessageShape<O>) => string) | undefined,
    private readonly ended: (res: NodeResponse) => void,
  ) {}

  /** Takes the next message; the socket has room for it. */
  next(): void {
    this.it.nextTo(this);
  }

  failed(e: unknown): void {
    this.end(true, e);
  }

  took(r: IteratorResult<MessageShape<O>>): void {
    const { res } = this;
    if (r.done === true) {
      this.end(false);
      return;
    }
    if (res.destroyed) {
      this.stop(false);
      return;
    }
    let room = true;
    try {
      room = writeText(res, eventText(r.value, this.output, this.eventId));
    } catch (e) {
      this.stop(true, e);
      return;
    }
    if (room) this.next();
    else void writableAgain(res).then(() => this.next());
  }

  /** The writer stopped early (client gone, a message it could not write): the messages are returned first. */
  private stop(failed: boolean, e?: unknown): void {
    void returnQuietly(this.it).then(() => this.end(failed, e));
  }

  /** The stream ended: with `e`, it failed after it started (an `error` event, if the client is still there). */
  private end(failed: boolean, e?: unknown): void {
    const { res } = this;
    if (failed && !res.destroyed) writeText(res, `event: error\ndata: ${toJsonError(e).body}\n\n`);
    keepAlives.remove(res);
    res.end();
    if (!res.writableFinished && !res.destroyed) {
      const untaken = setTimeout(() => res.destroy(), UNTAKEN_ANSWER_MS);
      untaken.unref();
      res.once("close", () => clearTimeout(untaken));
    }
    this.ended(res);
  }
}
