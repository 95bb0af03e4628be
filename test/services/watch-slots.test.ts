/**
 * The watch slots (src/services/watch-slots.ts): every slot of the instance,
 * and each project's share of them. One project past its share is refused
 * with a jittered Retry-After while another still takes a slot; a slot given
 * back is the project's again; the instance's bound still holds over all.
 */
import { describe, expect, it } from "vitest";
import { Failure } from "../../src/services/failure.js";
import { type Refusal, WatchSlots } from "../../src/services/watch-slots.js";

function refusalOf(f: () => unknown): Failure {
  try {
    f();
  } catch (e) {
    if (e instanceof Failure) return e;
    throw e;
  }
  throw new Error("not refused");
}

describe("a project's share of the watch slots", () => {
  it("refuses a project past its share, saying so, while another project still takes slots", () => {
    const told: Array<[number, Refusal, string]> = [];
    const slots = new WatchSlots(
      10,
      3,
      (inUse, why, project) => told.push([inUse, why, project]),
      () => 0,
    );
    for (let i = 0; i < 3; i++) slots.takeOne("a");
    const refused = refusalOf(() => slots.takeOne("a"));
    expect(refused.kind).toBe("rate_limited");
    expect(refused.detail).toMatch(/this project has its share .*MAX_WATCHES_PER_PROJECT/);
    expect(refused.retryAfterSeconds).toBe(1);
    expect(told).toEqual([[3, "project", "a"]]);
    slots.takeOne("b");
    expect([slots.heldBy("a"), slots.heldBy("b"), slots.inUse, slots.refused]).toEqual([3, 1, 4, 1]);
  });

  it("gives a slot back to its project: the project may take one again, and forgets a project that holds none", () => {
    const slots = new WatchSlots(10, 2);
    const release = slots.take("a");
    slots.takeOne("a");
    expect(() => slots.takeOne("a")).toThrow(Failure);
    release();
    release(); // once, however often
    slots.takeOne("a");
    expect(slots.heldBy("a")).toBe(2);
    slots.giveBack("a");
    slots.giveBack("a");
    expect([slots.heldBy("a"), slots.inUse]).toEqual([0, 0]);
  });

  it("still bounds the instance: shares that fit refuse nobody until every slot is taken", () => {
    const told: Refusal[] = [];
    const slots = new WatchSlots(
      4,
      3,
      (_inUse, why) => told.push(why),
      () => 0.99,
    );
    slots.takeOne("a");
    slots.takeOne("a");
    slots.takeOne("b");
    slots.takeOne("c");
    const refused = refusalOf(() => slots.takeOne("d"));
    expect(refused.detail).toMatch(/too many watches on this server/);
    expect(refused.retryAfterSeconds).toBe(3);
    expect(told).toEqual(["instance"]);
  });

  it("without a share, one project may take every slot; a share outside 1..max is refused", () => {
    const slots = new WatchSlots(3);
    for (let i = 0; i < 3; i++) slots.takeOne("a");
    expect(slots.inUse).toBe(3);
    expect(() => new WatchSlots(3, 4)).toThrow(RangeError);
    expect(() => new WatchSlots(3, 0)).toThrow(RangeError);
  });
});
