/** The lazily made signal of a call's cancellation behaves like an AbortController's. */
import { expect, test } from "vitest";
import { CallCancellation, cancellationOf } from "../../../src/server/call/cancellation.js";

test("a signal asked for before the abort aborts with it, once", () => {
  const c = new CallCancellation();
  const signal = c.signal;
  let events = 0;
  signal.addEventListener("abort", () => events++);
  expect(c.aborted).toBe(false);
  c.abort();
  c.abort();
  expect(c.aborted).toBe(true);
  expect(signal.aborted).toBe(true);
  expect(events).toBe(1);
  expect(c.signal).toBe(signal);
});

test("a signal asked for after the abort is already aborted", () => {
  const c = new CallCancellation();
  c.abort();
  expect(c.signal.aborted).toBe(true);
  expect((c.signal.reason as Error).name).toBe("AbortError");
});

test("an existing signal is read through", () => {
  const controller = new AbortController();
  const c = cancellationOf(controller.signal);
  expect(c.aborted).toBe(false);
  controller.abort();
  expect(c.aborted).toBe(true);
  expect(c.signal).toBe(controller.signal);
});

test("what onAbort was given ends once at the abort, without making a signal; one given after it runs at once", () => {
  const c = new CallCancellation();
  const ran: string[] = [];
  const ending = (name: string) => ({ end: () => void ran.push(name) });
  c.onAbort(ending("first"));
  c.onAbort(ending("second"));
  c.onAbort(ending("third"));
  expect(ran).toEqual([]);
  c.abort("deadline");
  c.abort();
  expect(ran).toEqual(["first", "second", "third"]);
  expect(c.deadlinePassed).toBe(true);
  expect(Object.values(c).some((v) => v instanceof AbortController)).toBe(false);
  c.onAbort(ending("late"));
  expect(ran).toEqual(["first", "second", "third", "late"]);
});

test("onAbort of an existing signal runs once when it aborts, at once when it has", () => {
  const controller = new AbortController();
  const c = cancellationOf(controller.signal);
  let ran = 0;
  const ending = { end: () => void ran++ };
  c.onAbort(ending);
  controller.abort();
  controller.abort();
  expect(ran).toBe(1);
  c.onAbort(ending);
  expect(ran).toBe(2);
});
