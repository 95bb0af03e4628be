/** The gRPC fast path's framing: one uncompressed message in, one out (grpc-fast-path.ts). */
import { describe, expect, it } from "vitest";
import { frame, unframe } from "../../../src/server/rpc/grpc-fast-path.js";
import { Failure } from "../../../src/services/failure.js";

const NOT_ONE_MESSAGE = "the request is not exactly one uncompressed gRPC message";

function rejects(body: Buffer): void {
  let thrown: unknown;
  try {
    unframe(body);
  } catch (e) {
    thrown = e;
  }
  expect(thrown).toBeInstanceOf(Failure);
  expect(thrown).toMatchObject({ kind: "invalid", detail: NOT_ONE_MESSAGE });
}

describe("frame", () => {
  it("writes flag 0, the big-endian length and the message", () => {
    expect([...frame(new Uint8Array([7, 8, 9]))]).toEqual([0, 0, 0, 0, 3, 7, 8, 9]);
    expect([...frame(new Uint8Array(0))]).toEqual([0, 0, 0, 0, 0]);
    expect([...frame(new Uint8Array(300)).subarray(0, 5)]).toEqual([0, 0, 0, 1, 44]);
  });
});

describe("unframe", () => {
  it("reads back what frame wrote, empty messages included", () => {
    for (const n of [0, 1, 5, 300, 70_000]) {
      const message = Uint8Array.from({ length: n }, (_, i) => i & 0xff);
      expect([...unframe(frame(message))]).toEqual([...message]);
    }
  });

  it("shares the body's bytes (no copy)", () => {
    const body = frame(new Uint8Array([1, 2]));
    const message = unframe(body);
    body[5] = 42;
    expect(message[0]).toBe(42);
  });

  it("refuses a body shorter than a frame header", () => {
    for (const n of [0, 1, 4]) rejects(Buffer.alloc(n));
  });

  it("refuses a compressed flag", () => {
    rejects(Buffer.from([1, 0, 0, 0, 1, 9]));
  });

  it("refuses a length that is not the rest of the body (short, long, two messages)", () => {
    rejects(Buffer.from([0, 0, 0, 0, 2, 9]));
    rejects(Buffer.from([0, 0, 0, 0, 1, 9, 9]));
    rejects(Buffer.concat([frame(new Uint8Array([1])), frame(new Uint8Array([2]))]));
  });
});
