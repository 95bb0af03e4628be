import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config/index.js";
import { parseHostPorts } from "../../src/config/read-variable.js";
import { SECRET } from "./helpers.js";

const VARIABLE = "REDIS_CLUSTER_NODES";

describe("parseHostPorts", () => {
  it("reads host:port lists, IPv6 in brackets, and a default port", () => {
    expect(parseHostPorts(VARIABLE, "a:7000, b:7001,[::1]:7002,c", 6379)).toEqual([
      { host: "a", port: 7000 },
      { host: "b", port: 7001 },
      { host: "::1", port: 7002 },
      { host: "c", port: 6379 },
    ]);
    expect(parseHostPorts("REDIS_SENTINELS", "s1", 26379)).toEqual([{ host: "s1", port: 26379 }]);
    expect(parseHostPorts(VARIABLE, "[fe80::1]", 6379)).toEqual([{ host: "fe80::1", port: 6379 }]);
    expect(parseHostPorts(VARIABLE, "10.0.0.1:1,,host.example:65535,", 6379)).toEqual([
      { host: "10.0.0.1", port: 1 },
      { host: "host.example", port: 65535 },
    ]);
  });

  it("names the entry it cannot read", () => {
    expect(() => parseHostPorts(VARIABLE, "", 6379)).toThrow(/at least one/);
    expect(() => parseHostPorts(VARIABLE, "a:70000", 6379)).toThrow("a:70000");
    expect(() => parseHostPorts(VARIABLE, "a:b:c", 6379)).toThrow("a:b:c");
    expect(() => parseHostPorts(VARIABLE, "a:0", 6379)).toThrow("a:0");
  });

  it.each([
    [" , ", /must list at least one host:port$/],
    ["a:", /"a:"/],
    ["a:-1", /"a:-1"/],
    ["a:123456", /"a:123456"/],
    ["::1", /"::1"/],
    ["[::1]:0", /"\[::1\]:0"/],
    ["[::1", /"\[::1"/],
    ["a b:7000", /"a b:7000"/],
    ["good:1,bad:99999", /"bad:99999"/],
  ])("rejects %j with one line naming the variable", (list, message) => {
    let error: unknown;
    try {
      parseHostPorts(VARIABLE, list, 6379);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe(VARIABLE);
    expect((error as ConfigError).message).toMatch(new RegExp(`^${VARIABLE} `));
    expect((error as ConfigError).message).toMatch(message);
  });
});

describe("host lists in the configuration", () => {
  it("cluster seed nodes default to port 6379, sentinels to 26379", () => {
    const cluster = loadConfig({ JWT_SECRET: SECRET, REDIS_CLUSTER_NODES: "n1,[::1]:7001" });
    expect(cluster.redis).toEqual({
      mode: "cluster",
      nodes: [
        { host: "n1", port: 6379 },
        { host: "::1", port: 7001 },
      ],
    });
    const sentinel = loadConfig({ JWT_SECRET: SECRET, REDIS_SENTINELS: "s1, s2:5000", REDIS_SENTINEL_NAME: "m" });
    expect(sentinel.redis).toEqual({
      mode: "sentinel",
      sentinels: [
        { host: "s1", port: 26379 },
        { host: "s2", port: 5000 },
      ],
      masterName: "m",
    });
  });
});
