/**
 * The simulator's schedule: `taskEndsAt` is exactly the first instant at which
 * `taskProgress` answers a terminal state, for any task (the bench reads it as
 * "the simulator reached Finished").
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isTerminal, type SimulatedTaskSpec, taskEndsAt, taskProgress } from "../../src/demo/simulator/tasks.js";

const spec = fc.record({
  createdAt: fc.integer({ min: 0, max: 4_000_000_000_000 }),
  pageCount: fc.integer({ min: 1, max: 50 }),
  stepMs: fc.integer({ min: 1, max: 120_000 }),
  willFail: fc.boolean(),
});

function task(s: { createdAt: number; pageCount: number; stepMs: number; willFail: boolean }): SimulatedTaskSpec {
  return {
    ...s,
    uuid: "0".repeat(32),
    api: "projector",
    type: "static",
    resource: "https://files.example.com/a.pdf",
    preview: false,
    region: "us-sv",
    filesBase: "https://convertcdn.example",
  };
}

describe("taskEndsAt", () => {
  it("is the first instant the task answers Finished or Fail", () => {
    fc.assert(
      fc.property(spec, (s) => {
        const t = task(s);
        const end = taskEndsAt(t);
        expect(isTerminal(taskProgress(t, end - 1).status)).toBe(false);
        const last = taskProgress(t, end);
        expect(last.status).toBe(s.willFail ? "Fail" : "Finished");
        expect(taskProgress(t, end + s.stepMs * 7 + 3)).toEqual(last);
      }),
    );
  });

  it("is the moment of cancelling for a task cancelled before its end", () => {
    fc.assert(
      fc.property(spec, fc.double({ min: 0, max: 1, noNaN: true }), (s, share) => {
        const t = task(s);
        const abortedAt = s.createdAt + Math.floor((taskEndsAt(t) - s.createdAt - 1) * share);
        expect(taskEndsAt({ ...t, abortedAt })).toBe(abortedAt);
        expect(taskProgress({ ...t, abortedAt }, abortedAt).status).toBe("Abort");
      }),
    );
  });
});
