import { describe, expect, it } from "vitest";
import { reconnectDelay } from "../../src/store/redis/connection.js";

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
