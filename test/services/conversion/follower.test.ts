/**
 * The conversion follower on the in-memory store with a scripted backend and a
 * clock of the test's own: when it polls, what it saves, when it gives up, and
 * how a second follower takes a task over from one that died.
 */
import { describe, expect, it } from "vitest";
import { ConversionFollower, type FollowerSettings } from "../../../src/services/conversion/follower.js";
import { Failure } from "../../../src/services/failure.js";
import type {
  ConversionBackend,
  ConversionState,
  ConversionTaskRecord,
  ConversionTaskRef,
} from "../../../src/services/ports.js";
import { MemoryStore } from "../../../src/store/memory/store.js";
import { eventually } from "../../harness/eventually.js";

const SETTINGS: FollowerSettings = {
  firstPollMs: 1_000,
  maxPollMs: 4_000,
  followMs: 60_000,
  leaseMs: 10_000,
  tickMs: 1_000_000, // ticks are driven by the test
  batch: 10,
  maxInFlight: 100,
  queueMax: 100,
};

/** A backend whose answers the test scripts, one per query. */
class ScriptedBackend implements ConversionBackend {
  readonly queries: number[] = [];
  constructor(
    private readonly clock: { now: number },
    private readonly answers: Array<ConversionState | Error>,
  ) {}
  async createTask(): Promise<never> {
    throw new Error("not used");
  }
  async queryTask(_ref: ConversionTaskRef): Promise<ConversionState> {
    this.queries.push(this.clock.now);
    const next = this.answers.shift() ?? new Failure("unavailable");
    if (next instanceof Error) throw next;
    return next;
  }
  async cancelTask(): Promise<never> {
    throw new Error("not used");
  }
}

async function world(answers: Array<ConversionState | Error>, settings: Partial<FollowerSettings> = {}) {
  const clock = { now: 1_000_000 };
  const store = new MemoryStore({ keyPrefix: "bl:", now: () => clock.now });
  await store.setWhiteboard("p", { region: "us-sv", credentials: { sdkToken: "NETLESSSDK_x" } });
  await store.conversions.recordConversion(
    waiting("task1", clock.now),
    clock.now + (settings.firstPollMs ?? SETTINGS.firstPollMs),
  );
  const backend = new ScriptedBackend(clock, answers);
  const troubles: unknown[] = [];
  const follower = (owner: string) =>
    new ConversionFollower({
      store,
      backend,
      settings: { ...SETTINGS, ...settings },
      owner,
      onTrouble: (_uuid, e) => troubles.push(e),
      now: () => clock.now,
    });
  return { clock, store, backend, follower, troubles };
}

const converting = (percent: number): ConversionState => ({ status: "Converting", percent, pages: [] });
const finished: ConversionState = {
  status: "Finished",
  percent: 100,
  pageCount: 1,
  pages: [{ page: 1, url: "https://cdn.example/1.png", width: 1280, height: 720 }],
};

/** Advances the clock in steps of `stepMs`, ticking the follower at each, for `totalMs`. */
async function run(w: Awaited<ReturnType<typeof world>>, f: ConversionFollower, totalMs: number, stepMs = 250) {
  for (let t = 0; t < totalMs; t += stepMs) {
    w.clock.now += stepMs;
    await f.tick();
  }
}

describe("the conversion follower", () => {
  it("polls first after firstPollMs, then at half the task's age, at most maxPollMs apart, until Finished", async () => {
    const w = await world([converting(10), converting(40), converting(70), converting(90), finished]);
    const f = w.follower("a");
    await run(w, f, 20_000);
    const created = 1_000_000;
    expect(w.backend.queries.map((t) => t - created)).toEqual([1_000, 2_000, 3_000, 4_500, 6_750]);
    const record = await w.store.conversions.getConversion("task1");
    expect(record).toMatchObject({ status: "Finished", percent: 100, pageCount: 1 });
    expect(
      (await w.store.conversions.claimDueConversions(w.clock.now + 60_000, 10, "z", 1_000)).map((t) => t.uuid),
    ).toEqual([]); // not due any more
    const events = await w.store.getWhiteboardEvents("p", "c", 10);
    expect(events).toHaveLength(1);
  });

  it("retries backend trouble without recording it, then records the answer", async () => {
    const w = await world([new Failure("unavailable"), new Failure("deadline_exceeded"), finished]);
    await run(w, w.follower("a"), 10_000);
    expect(w.backend.queries).toHaveLength(3);
    expect((await w.store.conversions.getConversion("task1"))?.status).toBe("Finished");
    expect(w.troubles).toHaveLength(2);
  });

  it("records Fail, reason timeout, once followMs has passed", async () => {
    const w = await world([], { followMs: 5_000 });
    await run(w, w.follower("a"), 12_000);
    expect(await w.store.conversions.getConversion("task1")).toMatchObject({ status: "Fail", failedReason: "timeout" });
    expect(await w.store.getWhiteboardEvents("p", "c", 10)).toHaveLength(1);
  });

  it("wake looks for due tasks at once; wakes during a look make one more look; none once stopped", async () => {
    const w = await world([converting(10), converting(20)]);
    const claims: number[] = [];
    const claim = w.store.conversions.claimDueConversions.bind(w.store.conversions);
    w.store.conversions.claimDueConversions = (...args) => {
      claims.push(args[0]);
      return claim(...args);
    };
    const f = w.follower("a");
    f.wake(); // not started: nothing
    expect(claims).toEqual([]);
    f.start(); // its ticks are a million ms apart: every look below is a wake's
    expect(await w.store.conversions.wakeConversion("task1", w.clock.now)).toBe(true);
    f.wake();
    f.wake();
    f.wake();
    await eventually(() => claims.length === 2, 2_000, "the second look");
    await f.stop();
    expect(claims).toHaveLength(2);
    expect(w.backend.queries).toEqual([w.clock.now]); // the first look polled the woken task
    f.wake();
    expect(claims).toHaveLength(2);
  });

  it("a second follower takes a task over once the first one's lease has run out", async () => {
    const w = await world([converting(50), finished]);
    const first = w.follower("a");
    w.clock.now += 1_000;
    // The first follower claims the task and dies before saving anything (its claim stays).
    expect(
      (await w.store.conversions.claimDueConversions(w.clock.now, 10, "a", SETTINGS.leaseMs)).map((t) => t.uuid),
    ).toEqual(["task1"]);
    void first;
    const second = w.follower("b");
    await run(w, second, SETTINGS.leaseMs - 1_000);
    expect(w.backend.queries).toHaveLength(0); // still leased by the dead one
    await run(w, second, 10_000);
    expect((await w.store.conversions.getConversion("task1"))?.status).toBe("Finished");
  });

  it("tells how late each poll began after its task was due", async () => {
    const w = await world([converting(10), converting(20)]);
    const late: number[] = [];
    const f = new ConversionFollower({
      store: w.store,
      backend: w.backend,
      settings: SETTINGS,
      owner: "a",
      onTrouble: () => {},
      onPoll: (ms) => late.push(ms),
      now: () => w.clock.now,
    });
    w.clock.now += 1_000; // exactly due
    await f.tick();
    w.clock.now += 1_000 + 700; // due 1 000 ms after that poll: 700 ms late
    await f.tick();
    expect(late).toEqual([0, 700]);
  });

  it("claims as fast as polls end, up to maxInFlight under way: not one batch per tick", async () => {
    const w = await busyWorld(300);
    const f = w.follower("a", { batch: 10, maxInFlight: 40 });
    f.start(); // ticks a million ms apart: only the wake and the polls' ends make looks
    f.wake();
    await eventually(() => w.polled.size === 300, 10_000, "every due task polled");
    await f.stop();
    expect(w.most).toBeGreaterThan(10); // more than one batch under way at once
    expect(w.most).toBeLessThanOrEqual(40);
    expect(w.twice).toEqual([]);
  });

  it("looks every tickMs while nothing is due, ten times as often while its looks find tasks", async () => {
    // Real timers: tickMs 200, so a look every 100–300 ms idle and every 10–30 ms busy.
    const looksInOneSecond = async (tasks: number) => {
      const w = await busyWorld(tasks);
      const f = w.follower("a", { tickMs: 200, batch: 100, firstPollMs: 50, maxPollMs: 50 });
      let looks = 0;
      const claim = w.store.conversions.claimDueConversions.bind(w.store.conversions);
      w.store.conversions.claimDueConversions = (...args) => {
        looks++;
        return claim(...args);
      };
      const ticking = setInterval(() => {
        w.clock.now += 10; // the tasks come due again 50 ms after each poll
      }, 10);
      f.start();
      await new Promise((r) => setTimeout(r, 1_000));
      clearInterval(ticking);
      await f.stop();
      return looks;
    };
    expect(await looksInOneSecond(0)).toBeLessThanOrEqual(11);
    expect(await looksInOneSecond(10)).toBeGreaterThanOrEqual(20);
  });

  it("two followers on one due index share it, and never poll one task twice at once", async () => {
    const w = await busyWorld(400);
    const [a, b] = [w.follower("a", { batch: 10, maxInFlight: 30 }), w.follower("b", { batch: 10, maxInFlight: 30 })];
    for (const f of [a, b]) {
      f.start();
      f.wake();
    }
    await eventually(() => w.polled.size === 400, 10_000, "every due task polled");
    await Promise.all([a.stop(), b.stop()]);
    expect(w.twice).toEqual([]);
    expect(w.queries).toBe(400); // each once: a claimed task is not due again until its next poll time
    expect(w.byOwner.get("a")).toBeGreaterThan(100);
    expect(w.byOwner.get("b")).toBeGreaterThan(100);
  });
});

/**
 * `count` tasks all due now, on a real-time backend that answers Converting after a few ms and
 * counts the polls under way (at most, per task, per follower).
 */
async function busyWorld(count: number) {
  const clock = { now: 1_000_000 };
  const store = new MemoryStore({ keyPrefix: "bl:", now: () => clock.now });
  await store.setWhiteboard("p", { region: "us-sv", credentials: { sdkToken: "NETLESSSDK_x" } });
  const w = {
    polled: new Set<string>(),
    twice: [] as string[],
    most: 0,
    queries: 0,
    byOwner: new Map<string, number>(),
  };
  const underway = new Set<string>();
  for (let i = 0; i < count; i++) {
    const uuid = `task${i}`;
    await store.conversions.recordConversion(waiting(uuid, clock.now), clock.now);
  }
  const backendOf = (owner: string): ConversionBackend => ({
    createTask: () => Promise.reject(new Error("not used")),
    cancelTask: () => Promise.reject(new Error("not used")),
    async queryTask(ref: ConversionTaskRef) {
      if (underway.has(ref.uuid)) w.twice.push(ref.uuid);
      underway.add(ref.uuid);
      w.queries++;
      w.byOwner.set(owner, (w.byOwner.get(owner) ?? 0) + 1);
      w.most = Math.max(w.most, underway.size);
      await new Promise((r) => setTimeout(r, 2 + Math.random() * 6));
      underway.delete(ref.uuid);
      w.polled.add(ref.uuid);
      return converting(10);
    },
  });
  const follower = (owner: string, settings: Partial<FollowerSettings>) =>
    new ConversionFollower({
      store,
      backend: backendOf(owner),
      settings: { ...SETTINGS, ...settings },
      owner,
      onTrouble: () => {},
      now: () => clock.now,
    });
  return Object.assign(w, { follower, store, clock });
}

/** A task of project p just created at `at`, still Waiting. */
function waiting(uuid: string, at: number): ConversionTaskRecord {
  return {
    uuid,
    project: "p",
    channel: "c",
    type: "static",
    api: "projector",
    status: "Waiting",
    percent: 0,
    pages: [],
    createdAt: at,
    updatedAt: at,
    by: "u",
  };
}
