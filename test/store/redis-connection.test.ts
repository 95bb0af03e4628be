import { describe, expect, it } from "vitest";
import { parseRedisNodes, reconnectDelay } from "../../src/store/redis-connection.js";

describe("parseRedisNodes", () => {
  it("reads host:port lists, IPv6 in brackets, and a default port", () => {
    expect(parseRedisNodes("a:7000, b:7001,[::1]:7002,c")).toEqual([
      { host: "a", port: 7000 },
      { host: "b", port: 7001 },
      { host: "::1", port: 7002 },
      { host: "c", port: 6379 },
    ]);
    expect(parseRedisNodes("s1", 26379)).toEqual([{ host: "s1", port: 26379 }]);
  });

  it("names the entry it cannot read", () => {
    expect(() => parseRedisNodes("")).toThrow(/at least one/);
    expect(() => parseRedisNodes("a:70000")).toThrow("a:70000");
    expect(() => parseRedisNodes("a:b:c")).toThrow("a:b:c");
    expect(() => parseRedisNodes("a:0")).toThrow("a:0");
  });
});

describe("reconnectDelay", () => {
  it("grows from about 50 ms and never exceeds the cap", () => {
    expect(reconnectDelay(1, 500)).toBeLessThanOrEqual(50);
    expect(reconnectDelay(1, 500)).toBeGreaterThanOrEqual(40);
    for (let attempt = 1; attempt < 1000; attempt++) {
      expect(reconnectDelay(attempt, 500)).toBeLessThanOrEqual(500);
    }
    expect(reconnectDelay(50, 500)).toBeGreaterThanOrEqual(400);
  });
});
