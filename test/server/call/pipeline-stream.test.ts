/**
 * A server-streaming call through the pipeline, whatever ends it: the stream
 * ran out, the domain failed mid-stream, or the transport stopped taking it
 * (`return`, also while the domain is still finding the next message). Each
 * way, the call is counted exactly once with its outcome, and the domain's
 * messages are returned when the stream did not run out, so it cleans up.
 * All of it twice: taken through promises (`next`, as connect-es takes it),
 * and handed to a taker (`nextTo`, as the fast transports take it) from a
 * domain stream that hands its results on too.
 */
import { create, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { PstnService, type PstnEventSchema } from "../../../gen/channel/v1/pstn_pb.js";
import { createLogger } from "../../../src/log.js";
import { CallCancellation } from "../../../src/server/call/cancellation.js";
import { Openings } from "../../../src/server/call/openings.js";
import { CallPipeline } from "../../../src/server/call/pipeline.js";
import type { ReportedStream } from "../../../src/server/call/reported-stream.js";
import type { ServedStream } from "../../../src/server/call/served-methods.js";
import { Metrics } from "../../../src/server/ops/metrics.js";
import { Failure } from "../../../src/services/failure.js";
import type { PushIterator } from "../../../src/services/push-stream.js";

type Event = MessageInitShape<typeof PstnEventSchema>;

/**
 * A domain stream the test drives: `push` a message, `fail` it, `finish` it; `returned` counts
 * `return` calls. A `handing` one hands its results to a taker and refuses to be asked through promises.
 */
function domainStream(handing: boolean) {
  const queue: Array<IteratorResult<Event> | Error> = [];
  let waiting: { resolve(r: IteratorResult<Event>): void; reject(e: unknown): void } | undefined;
  const state = { returned: 0 };
  const settle = (item: IteratorResult<Event> | Error) => {
    const w = waiting;
    if (w === undefined) return void queue.push(item);
    waiting = undefined;
    if (item instanceof Error) w.reject(item);
    else w.resolve(item);
  };
  const iterator: PushIterator<Event> = {
    next: () => {
      if (handing) throw new Error("a stream that hands its results on is asked through promises");
      const item = queue.shift();
      if (item instanceof Error) return Promise.reject(item);
      if (item !== undefined) return Promise.resolve(item);
      return new Promise((resolve, reject) => {
        waiting = { resolve, reject };
      });
    },
    nextTo: (taker) => {
      if (!handing) throw new Error("this stream does not hand its results on");
      const item = queue.shift();
      if (item instanceof Error) return queueMicrotask(() => taker.failed(item));
      if (item !== undefined) return queueMicrotask(() => taker.took(item));
      waiting = { resolve: (r) => taker.took(r), reject: (e) => taker.failed(e) };
    },
    return: () => {
      state.returned++;
      settle({ done: true, value: undefined });
      return Promise.resolve({ done: true, value: undefined });
    },
  };
  if (!handing) Reflect.deleteProperty(iterator, "nextTo");
  return {
    state,
    iterable: { [Symbol.asyncIterator]: () => iterator },
    push: (uid: string) => settle({ done: false, value: { uid } }),
    fail: (e: Error) => settle(e),
    finish: () => settle({ done: true, value: undefined }),
  };
}

async function callsCounted(metrics: Metrics): Promise<string[]> {
  const text = (await metrics.render()).body;
  return text.split("\n").filter((l) => l.startsWith("boardline_calls_total{"));
}

/** The next message as the transport takes it: through a promise, or handed to it (never from within `nextTo`). */
function taking(stream: ReportedStream<DescMessage>, handed: boolean): () => Promise<IteratorResult<unknown>> {
  if (!handed) return () => stream.next();
  return () =>
    new Promise((resolve, reject) => {
      let inside = true;
      const outside = () => {
        if (inside) reject(new Error("handed on from within nextTo"));
        return true;
      };
      stream.nextTo({
        took: (r) => outside() && resolve(r),
        failed: (e) => outside() && reject(e),
      });
      inside = false;
    });
}

/** A pipeline whose one stream asks `invoke` for the domain's messages; `begin` starts a call of it. */
function streamPipeline(invoke: () => Promise<unknown>, openings?: Openings) {
  const metrics = new Metrics({ collectDefault: false });
  const pipeline = new CallPipeline(
    { authenticate: async () => ({ project: "p", subject: "s", scopes: new Set<string>() }) },
    createLogger("silent"),
    metrics,
    undefined,
    openings,
  );
  const op = { method: PstnService.method.watchPstnEvents, invoke } as unknown as ServedStream;
  const begin = () =>
    pipeline
      .begin(op, {
        protocol: "grpc",
        authorization: "Bearer x",
        requestId: "r",
        cancellation: new CallCancellation(),
      })
      .runStream(() => create(PstnService.method.watchPstnEvents.input, { channelIds: ["c"] }));
  return { metrics, begin };
}

function setUp(handing: boolean) {
  const domain = domainStream(handing);
  return { ...streamPipeline(async () => domain.iterable), domain };
}

describe.each([
  { taken: "through promises", handed: false },
  { taken: "handed to a taker", handed: true },
])("a stream through the call pipeline, taken $taken", ({ handed }) => {
  it("gives the domain's messages as messages of the output type, and counts the call once, OK, when they run out", async () => {
    const { metrics, domain, begin } = setUp(handed);
    const it = await begin();
    const next = taking(it, handed);
    domain.push("a");
    domain.push("b");
    const a = await next();
    expect(a.done).toBe(false);
    expect(a.value).toMatchObject({ $typeName: "channel.v1.PstnEvent", uid: "a" });
    expect((await next()).value).toMatchObject({ uid: "b" });
    const waiting = next(); // the domain has nothing yet
    domain.push("c");
    expect((await waiting).value).toMatchObject({ uid: "c" });
    expect(await callsCounted(metrics)).toEqual([]);
    domain.finish();
    expect(await next()).toEqual({ done: true, value: undefined });
    expect(await next()).toEqual({ done: true, value: undefined });
    expect(await it.return?.()).toEqual({ done: true, value: undefined });
    expect(await callsCounted(metrics)).toEqual([
      'boardline_calls_total{rpc="WatchPstnEvents",protocol="grpc",code="ok"} 1',
    ]);
    expect(domain.state.returned).toBe(0);
  });

  it("counts a failure mid-stream once, with its documented code, returns the domain's messages, and rejects with it", async () => {
    const { metrics, domain, begin } = setUp(handed);
    const it = await begin();
    const next = taking(it, handed);
    domain.push("a");
    await next();
    const failure = new Failure("unavailable", { detail: "the watch fell behind" });
    const waiting = next();
    domain.fail(failure);
    await expect(waiting).rejects.toBe(failure);
    expect(await next()).toEqual({ done: true, value: undefined });
    expect(domain.state.returned).toBe(1);
    expect(await callsCounted(metrics)).toEqual([
      'boardline_calls_total{rpc="WatchPstnEvents",protocol="grpc",code="503"} 1',
    ]);
  });

  it("a transport that stops taking (return), even while a message is awaited, ends the domain's stream and counts OK once", async () => {
    const { metrics, domain, begin } = setUp(handed);
    const it = await begin();
    const pending = taking(it, handed)(); // waits: the domain has nothing yet
    expect(await it.return?.()).toEqual({ done: true, value: undefined });
    expect(await pending).toEqual({ done: true, value: undefined });
    expect(domain.state.returned).toBe(1);
    expect(await it.return?.()).toEqual({ done: true, value: undefined });
    expect(domain.state.returned).toBe(1);
    expect(await callsCounted(metrics)).toEqual([
      'boardline_calls_total{rpc="WatchPstnEvents",protocol="grpc",code="ok"} 1',
    ]);
  });
});

describe("streams opening at once through the call pipeline", () => {
  it("open in turns: the domain is asked for the next stream only once an opening ends, established or refused", async () => {
    const asked: Array<{ resolve(): void; reject(e: unknown): void }> = [];
    const { begin } = streamPipeline(
      () =>
        new Promise((resolve, reject) => {
          asked.push({ resolve: () => resolve(domainStream(false).iterable), reject });
        }),
      new Openings(2),
    );
    const calls = Array.from({ length: 4 }, begin);
    for (const c of calls) c.catch(() => {});
    const settled = () => new Promise((r) => setImmediate(r));
    await settled();
    expect(asked.length).toBe(2);
    asked[0]?.resolve();
    await calls[0];
    await settled();
    expect(asked.length).toBe(3);
    const refused = new Failure("not_found", { detail: "no such channel" });
    asked[1]?.reject(refused);
    await expect(calls[1]).rejects.toBe(refused);
    await settled();
    expect(asked.length).toBe(4);
    asked[2]?.resolve();
    asked[3]?.resolve();
    await Promise.all([calls[2], calls[3]]);
  });

  it("past the line's bound, a stream is refused at once (429, counted), never asked of the domain", async () => {
    const asked: Array<() => void> = [];
    const { metrics, begin } = streamPipeline(
      () => new Promise((resolve) => asked.push(() => resolve(domainStream(false).iterable))),
      new Openings(1, 1),
    );
    const first = begin();
    const second = begin(); // waits its turn
    await expect(begin()).rejects.toMatchObject({ kind: "rate_limited" });
    await new Promise((r) => setImmediate(r));
    expect(asked.length).toBe(1);
    expect(await callsCounted(metrics)).toEqual([
      'boardline_calls_total{rpc="WatchPstnEvents",protocol="grpc",code="429"} 1',
    ]);
    asked[0]?.();
    await first;
    await new Promise((r) => setImmediate(r));
    asked[1]?.();
    await second;
  });
});
