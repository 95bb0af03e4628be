/**
 * Streams open in turns (src/server/call/openings.ts): never more than the
 * limit at once, the rest in the order they came, and a turn ends however
 * its opening ends — resolved, rejected, or thrown before it returned; and
 * the line is bounded: past it an opening is refused at once, never queued.
 */
import { describe, expect, it } from "vitest";
import { Openings } from "../../../src/server/call/openings.js";

/** An opening the test ends: `started` once it runs, then `resolve` or `reject`. */
function opening(log: string[], name: string) {
  let resolve!: (v: string) => void;
  let reject!: (e: unknown) => void;
  let started = false;
  const open = () => {
    started = true;
    log.push(name);
    return new Promise<string>((res, rej) => {
      resolve = res;
      reject = rej;
    });
  };
  return {
    open,
    get started() {
      return started;
    },
    resolve: (v: string) => resolve(v),
    reject: (e: unknown) => reject(e),
  };
}

const turns = () => new Promise((r) => setImmediate(r));

describe("stream openings in turns", () => {
  it("runs at most the limit at once, the others in order as turns end, and settles each as its opening does", async () => {
    const openings = new Openings(2);
    const log: string[] = [];
    const o = ["a", "b", "c", "d", "e"].map((n) => opening(log, n));
    const results = o.map((x) => openings.open(x.open));
    for (const p of results) p.catch(() => {});
    await turns();
    expect(log).toEqual(["a", "b"]);
    expect(openings.queued).toBe(3);

    o[1]?.resolve("B");
    await turns();
    expect(log).toEqual(["a", "b", "c"]);
    await expect(results[1]).resolves.toBe("B");

    const refused = new Error("refused");
    o[0]?.reject(refused);
    await turns();
    expect(log).toEqual(["a", "b", "c", "d"]);
    await expect(results[0]).rejects.toBe(refused);
    expect(openings.queued).toBe(1);

    o[2]?.resolve("C");
    o[3]?.resolve("D");
    await turns();
    expect(log).toEqual(["a", "b", "c", "d", "e"]);
    o[4]?.resolve("E");
    expect(await Promise.all(results.slice(2))).toEqual(["C", "D", "E"]);
    expect(openings.queued).toBe(0);

    // every turn given back: two run at once again, at once
    const f = opening(log, "f");
    const g = opening(log, "g");
    openings.open(f.open);
    openings.open(g.open);
    expect(f.started && g.started).toBe(true);
  });

  it("ends the turn of an opening that throws before it returns a promise", async () => {
    const openings = new Openings(1);
    const boom = new Error("boom");
    await expect(
      openings.open(() => {
        throw boom;
      }),
    ).rejects.toBe(boom);
    const log: string[] = [];
    const next = opening(log, "next");
    openings.open(next.open);
    expect(next.started).toBe(true);
  });

  it("keeps the order through a queue long enough to be copied down as it is taken", async () => {
    const openings = new Openings(1);
    const log: string[] = [];
    const first = opening(log, "first");
    openings.open(first.open);
    const n = 5000;
    const order: number[] = [];
    const all = Array.from({ length: n }, (_, i) =>
      openings.open(async () => {
        order.push(i);
        return i;
      }),
    );
    expect(openings.queued).toBe(n);
    first.resolve("done");
    await Promise.all(all);
    expect(order).toEqual(Array.from({ length: n }, (_, i) => i));
    expect(openings.queued).toBe(0);
  });

  it("refuses an opening at once when the line is full, without running it; a place freed takes the next", async () => {
    const told: number[] = [];
    const openings = new Openings(
      1,
      2,
      (waiting) => told.push(waiting),
      () => 0.99,
    );
    const log: string[] = [];
    const [a, b, c, d] = ["a", "b", "c", "d"].map((n) => opening(log, n));
    const results = [a, b, c].map((x) => openings.open((x as ReturnType<typeof opening>).open));
    const refused = openings.open((d as ReturnType<typeof opening>).open);
    await expect(refused).rejects.toMatchObject({ kind: "rate_limited", retryAfterSeconds: 3 });
    expect(d?.started).toBe(false);
    expect(openings.queued).toBe(2); // never queued: the line stays at its bound
    expect([openings.refused, told]).toEqual([1, [2]]);
    // `refused` answers instead, when the caller reports refusals itself
    await expect(
      openings.open(
        async () => "ran",
        async (f) => `answered ${f.kind}`,
      ),
    ).resolves.toBe("answered rate_limited");
    a?.resolve("A");
    await turns();
    expect(log).toEqual(["a", "b"]);
    const e = opening(log, "e");
    const queuedAgain = openings.open(e.open);
    expect(openings.queued).toBe(2);
    b?.resolve("B");
    await turns();
    c?.resolve("C");
    await turns();
    expect(log).toEqual(["a", "b", "c", "e"]);
    e.resolve("E");
    expect(await Promise.all([...results, queuedAgain])).toEqual(["A", "B", "C", "E"]);
  });

  it("refuses a limit below one", () => {
    expect(() => new Openings(0)).toThrow(RangeError);
    expect(() => new Openings(Number.NaN)).toThrow(RangeError);
  });
});
