import { describe, expect, it } from "vitest";
import { dropUnarmableDeadline, grpcTimeoutMs, MAX_TIMER_MS } from "../../../src/server/call/cancellation.js";

describe("call deadlines", () => {
  it("reads grpc-timeout in every unit", () => {
    expect(grpcTimeoutMs(undefined)).toBeUndefined();
    expect(grpcTimeoutMs("2H")).toBe(7_200_000);
    expect(grpcTimeoutMs("3M")).toBe(180_000);
    expect(grpcTimeoutMs("2S")).toBe(2_000);
    expect(grpcTimeoutMs("250m")).toBe(250);
    expect(grpcTimeoutMs("1500u")).toBe(1.5);
    expect(grpcTimeoutMs("99999999n")).toBeCloseTo(99.999999);
  });

  it("refuses malformed grpc-timeout values", () => {
    for (const v of ["", "1", "S", "1x", "123456789S", "-1S", "1.5S", " 1S"]) expect(grpcTimeoutMs(v)).toBeNull();
  });

  it("a deadline longer than a timer can hold is no deadline, not an error", () => {
    expect(grpcTimeoutMs("99999999H")).toBeUndefined();
    expect(grpcTimeoutMs(`${Math.floor(MAX_TIMER_MS / 1000)}S`)).toBe(Math.floor(MAX_TIMER_MS / 1000) * 1000);
    expect(grpcTimeoutMs(`${Math.floor(MAX_TIMER_MS / 1000) + 1}S`)).toBeUndefined();
  });

  it("drops only well-formed deadline headers that are too long to arm", () => {
    const headers: Record<string, string> = {
      "grpc-timeout": "99999999H",
      "connect-timeout-ms": "9999999999",
      other: "x",
    };
    dropUnarmableDeadline(headers);
    expect(headers).toEqual({ other: "x" });
    const kept: Record<string, string> = { "grpc-timeout": "5S", "connect-timeout-ms": "1000" };
    dropUnarmableDeadline(kept);
    expect(kept).toEqual({ "grpc-timeout": "5S", "connect-timeout-ms": "1000" });
    const malformed: Record<string, string> = { "grpc-timeout": "soon", "connect-timeout-ms": "-5" };
    dropUnarmableDeadline(malformed);
    expect(malformed).toEqual({ "grpc-timeout": "soon", "connect-timeout-ms": "-5" });
  });
});
