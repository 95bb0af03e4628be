/**
 * A server-streaming call through the pipeline, whatever ends it: the stream
 * ran out, the domain failed mid-stream, or the transport stopped taking it
 * (`return`, also while the domain is still finding the next message). Each
 * way, the call is counted exactly once with its outcome, and the domain's
 * messages are returned when the stream did not run out, so it cleans up.
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { PstnService, type PstnEventSchema } from "../../../gen/channel/v1/pstn_pb.js";
import { createLogger } from "../../../src/log.js";
import { CallCancellation } from "../../../src/server/call/cancellation.js";
import { CallPipeline } from "../../../src/server/call/pipeline.js";
import type { ServedStream } from "../../../src/server/call/served-methods.js";
import { Metrics } from "../../../src/server/ops/metrics.js";
import { Failure } from "../../../src/services/failure.js";

type Event = MessageInitShape<typeof PstnEventSchema>;

/** A domain stream the test drives: `push` a message, `fail` it, `finish` it; `returned` counts `return` calls. */
function domainStream() {
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
  const iterator: AsyncIterator<Event> = {
    next: () => {
      const item = queue.shift();
      if (item instanceof Error) return Promise.reject(item);
      if (item !== undefined) return Promise.resolve(item);
      return new Promise((resolve, reject) => {
        waiting = { resolve, reject };
      });
    },
    return: () => {
      state.returned++;
      settle({ done: true, value: undefined });
      return Promise.resolve({ done: true, value: undefined });
    },
  };
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

function setUp() {
  const metrics = new Metrics({ collectDefault: false });
  const pipeline = new CallPipeline(
    { authenticate: async () => ({ project: "p", subject: "s", scopes: new Set<string>() }) },
    createLogger("silent"),
    metrics,
  );
  const domain = domainStream();
  const op: ServedStream = {
    method: PstnService.method.watchPstnEvents,
    invoke: async () => domain.iterable,
  } as unknown as ServedStream;
  const begin = () =>
    pipeline
      .begin(op, {
        protocol: "grpc",
        authorization: "Bearer x",
        requestId: "r",
        cancellation: new CallCancellation(),
      })
      .runStream(() => create(PstnService.method.watchPstnEvents.input, { channelIds: ["c"] }));
  return { metrics, domain, begin };
}

describe("a stream through the call pipeline", () => {
  it("gives the domain's messages as messages of the output type, and counts the call once, OK, when they run out", async () => {
    const { metrics, domain, begin } = setUp();
    const it = (await begin())[Symbol.asyncIterator]();
    domain.push("a");
    domain.push("b");
    const a = await it.next();
    expect(a.done).toBe(false);
    expect(a.value).toMatchObject({ $typeName: "channel.v1.PstnEvent", uid: "a" });
    expect((await it.next()).value).toMatchObject({ uid: "b" });
    expect(await callsCounted(metrics)).toEqual([]);
    domain.finish();
    expect(await it.next()).toEqual({ done: true, value: undefined });
    expect(await it.next()).toEqual({ done: true, value: undefined });
    expect(await it.return?.()).toEqual({ done: true, value: undefined });
    expect(await callsCounted(metrics)).toEqual([
      'boardline_calls_total{rpc="WatchPstnEvents",protocol="grpc",code="ok"} 1',
    ]);
    expect(domain.state.returned).toBe(0);
  });

  it("counts a failure mid-stream once, with its documented code, returns the domain's messages, and rejects with it", async () => {
    const { metrics, domain, begin } = setUp();
    const it = (await begin())[Symbol.asyncIterator]();
    domain.push("a");
    await it.next();
    const failure = new Failure("unavailable", { detail: "the watch fell behind" });
    domain.fail(failure);
    await expect(it.next()).rejects.toBe(failure);
    expect(await it.next()).toEqual({ done: true, value: undefined });
    expect(domain.state.returned).toBe(1);
    expect(await callsCounted(metrics)).toEqual([
      'boardline_calls_total{rpc="WatchPstnEvents",protocol="grpc",code="503"} 1',
    ]);
  });

  it("a transport that stops taking (return), even while a message is awaited, ends the domain's stream and counts OK once", async () => {
    const { metrics, domain, begin } = setUp();
    const it = (await begin())[Symbol.asyncIterator]();
    const pending = it.next(); // waits: the domain has nothing yet
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
