/**
 * The submitter's own timer (src/services/conversion/submitter.ts): started as
 * in production, on the in-memory store with a fake backend, under fake
 * timers and a fake wall clock, with looks a minute apart: a queue given
 * back due at a time is looked at then, not at the next tick, however the
 * times of several queues interleave; a backend slower to answer than the
 * project's pace does not slow the pace.
 */
import { create } from "@bufbuild/protobuf";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ConvertFileRequestSchema } from "../../../gen/whiteboard/v1/whiteboard_pb.js";
import { WhiteboardConversions } from "../../../src/services/conversion/convert.js";
import { DEFAULT_FOLLOWER_SETTINGS } from "../../../src/services/conversion/follower.js";
import { paceMs } from "../../../src/services/conversion/pace.js";
import { ConversionSubmitter } from "../../../src/services/conversion/submitter.js";
import { SafeRetries } from "../../../src/services/idempotency/safe-retries.js";
import { noGuard } from "../../../src/services/no-guard.js";
import { MemoryStore } from "../../../src/store/memory/store.js";
import { callerOf } from "../store-contents.js";
import { FakeBackend } from "./fake-backend.js";

const MINUTE = 60_000;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "Date"], now: 1_800_000_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

async function world() {
  const store = new MemoryStore({ now: Date.now });
  // "fast" takes 20 requests a second, "slow" one: their next turns are far apart.
  await store.createChannel({ project: "fast", channel: "weekly", hostPassphrase: "host of fast" });
  await store.createChannel({ project: "slow", channel: "weekly", hostPassphrase: "host of slow" });
  await store.setWhiteboard("fast", { region: "eu", credentials: { sdkToken: "NETLESSSDK_f" }, conversionQps: 20 });
  await store.setWhiteboard("slow", { region: "eu", credentials: { sdkToken: "NETLESSSDK_s" }, conversionQps: 1 });
  const backend = new FakeBackend();
  const troubles: unknown[] = [];
  const submitter = new ConversionSubmitter({
    store,
    backend,
    settings: { ...DEFAULT_FOLLOWER_SETTINGS, tickMs: MINUTE },
    owner: "submitter-1",
    onTrouble: (_, e) => troubles.push(e),
  });
  const conversions = new WhiteboardConversions(store, noGuard, new SafeRetries(store.idempotency, 15_000), {
    queueMax: 100,
    submitter,
  });
  let n = 0;
  /** A ConvertFile of `project`, which wakes the submitter as in production. */
  const accept = async (project: string) => {
    n++;
    const answer = await conversions.convertFile(
      callerOf(project, [], "bob"),
      create(ConvertFileRequestSchema, {
        passphrase: `host of ${project}`,
        resourceUrl: `https://files.example/${project}/${n}.pdf`,
        conversionType: "static",
      }),
      undefined,
      undefined,
    );
    expect(answer.status).toBe("Queued");
  };
  const submitted = () => backend.created.map((r) => r.resourceUrl.replace("https://files.example/", ""));
  return { submitter, accept, submitted, troubles, backend };
}

describe("the submitter's timer", () => {
  it("looks at each queue when its next turn comes, though another queue's sooner turn came first", async () => {
    const { submitter, accept, submitted, troubles } = await world();
    submitter.start();
    await accept("slow");
    await accept("slow");
    await accept("fast");
    await vi.advanceTimersByTimeAsync(paceMs(20) * 2);
    expect(submitted()).toEqual(["slow/1.pdf", "fast/3.pdf"]);
    // The fast queue's next turn (empty, nothing to do) came first; the slow queue's is a second on.
    await vi.advanceTimersByTimeAsync(paceMs(1));
    expect(submitted()).toEqual(["slow/1.pdf", "fast/3.pdf", "slow/2.pdf"]);
    await submitter.stop();
    expect(troubles).toEqual([]);
  });

  it("keeps the project's pace when the backend answers slower than it: submissions overlap, in order", async () => {
    const { submitter, accept, submitted, troubles, backend } = await world();
    backend.createMs = 300;
    submitter.start();
    for (let i = 0; i < 5; i++) await accept("fast");
    await vi.advanceTimersByTimeAsync(paceMs(20) * 5 + 300);
    expect(submitted()).toEqual([1, 2, 3, 4, 5].map((n) => `fast/${n}.pdf`));
    const gaps = backend.askedAt.slice(1).map((at, i) => at - (backend.askedAt[i] ?? 0));
    expect(gaps, JSON.stringify(gaps)).toSatisfy((g: number[]) => g.every((gap) => gap >= paceMs(20) && gap < 300));
    await submitter.stop();
    expect(troubles).toEqual([]);
  });
});
