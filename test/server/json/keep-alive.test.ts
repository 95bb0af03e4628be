/**
 * The keep-alive comments of server-sent event streams (src/server/json/event-stream.ts):
 * every open stream gets `: keep-alive` every 15 s from when it opened, from one shared timer,
 * which stops once no stream is open; a stream that ended gets none.
 */
import { EventEmitter } from "node:events";
import { create } from "@bufbuild/protobuf";
import { afterEach, beforeEach, expect, test, vi } from "vitest";
import { type PstnEvent, PstnEventSchema } from "../../../gen/channel/v1/pstn_pb.js";
import { writeEventStream } from "../../../src/server/json/event-stream.js";
import type { NodeResponse } from "../../../src/server/http/request-answer.js";
import type { PushIterator } from "../../../src/services/push-stream.js";

/** What a stream wrote, as a response object that always has room. */
class WrittenResponse extends EventEmitter {
  readonly written: string[] = [];
  destroyed = false;
  writableFinished = false;
  writeHead(): this {
    return this;
  }
  write(text: string): boolean {
    this.written.push(text);
    return true;
  }
  end(): void {
    this.writableFinished = true;
  }
  get comments(): number {
    return this.written.filter((t) => t === ": keep-alive\n\n").length;
  }
}

/** A stream of events that ends when `end` is called. */
function endless(): { messages: PushIterator<PstnEvent>; end: () => void } {
  let finish: (r: IteratorResult<PstnEvent>) => void = () => {};
  const messages: PushIterator<PstnEvent> = {
    next: () => new Promise((resolve) => (finish = resolve)),
    nextTo: (taker) => (finish = (r) => taker.took(r)),
    return: () => Promise.resolve({ done: true, value: undefined }),
  };
  return { messages, end: () => finish({ done: true, value: undefined }) };
}

/** writeEventStream, its end as a promise. */
function streamed(res: WrittenResponse, messages: PushIterator<PstnEvent>, eventId?: (m: PstnEvent) => string) {
  return new Promise<void>((resolve) =>
    writeEventStream(res as unknown as NodeResponse, "r", PstnEventSchema, messages, eventId, () => resolve()),
  );
}

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

test("each open stream gets a keep-alive comment every 15 s from when it opened, from one timer that stops when none is open", async () => {
  const first = new WrittenResponse();
  const second = new WrittenResponse();
  const a = endless();
  const b = endless();
  const endedA = streamed(first, a.messages);
  await vi.advanceTimersByTimeAsync(5_000);
  const endedB = streamed(second, b.messages);
  expect(vi.getTimerCount()).toBe(1);

  await vi.advanceTimersByTimeAsync(9_500); // 14.5 s after the first opened
  expect([first.comments, second.comments]).toEqual([0, 0]);
  await vi.advanceTimersByTimeAsync(1_000); // 15.5 s
  expect([first.comments, second.comments]).toEqual([1, 0]);
  await vi.advanceTimersByTimeAsync(5_000); // 20.5 s: 15.5 s after the second opened
  expect([first.comments, second.comments]).toEqual([1, 1]);
  await vi.advanceTimersByTimeAsync(15_000); // 35.5 s
  expect([first.comments, second.comments]).toEqual([2, 2]);

  a.end();
  await endedA;
  expect(first.writableFinished).toBe(true);
  await vi.advanceTimersByTimeAsync(30_000);
  expect([first.comments, second.comments]).toEqual([2, 4]);
  expect(vi.getTimerCount()).toBe(1);

  b.end();
  await endedB;
  expect(vi.getTimerCount()).toBe(0);
});

test("an event written between keep-alives is the event's id and data lines", async () => {
  const res = new WrittenResponse();
  const event = create(PstnEventSchema, { eventId: "1-0", cursor: "1-0", channelId: "c", uid: "u", mute: true });
  let sent = false;
  const next = (): IteratorResult<PstnEvent> => {
    if (sent) return { done: true, value: undefined };
    sent = true;
    return { done: false, value: event };
  };
  const messages: PushIterator<PstnEvent> = {
    next: () => Promise.resolve(next()),
    nextTo: (taker) => queueMicrotask(() => taker.took(next())),
  };
  await streamed(res, messages, (m) => m.cursor);
  expect(res.written[0]).toMatch(/^id: 1-0\ndata: \{"event_id":"1-0",/);
  expect(res.written).toHaveLength(1);
  expect(vi.getTimerCount()).toBe(0);
});

test("a stream whose client is gone gets no keep-alive while it ends", async () => {
  const res = new WrittenResponse();
  const stream = endless();
  const ended = streamed(res, stream.messages);
  res.destroyed = true; // the client went away; the watch's end follows
  await vi.advanceTimersByTimeAsync(16_000);
  expect(res.comments).toBe(0);
  stream.end();
  await ended;
  expect(vi.getTimerCount()).toBe(0);
});
