import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { InvalidSdkTokenError, SDK_TOKEN_PREFIX, createSdkToken, verifySdkToken } from "../../src/netless/sdk-token.js";

/*
 * Known answers computed independently (Python's hmac/json/base64/urllib, not
 * this code) following netless-io/netless-token's Node implementation with a
 * fixed nonce and clock.
 */
const KNOWN = {
  writerWithExpiry: {
    input: {
      accessKey: "netless-ak",
      secretKey: "netless-sk",
      role: "writer",
      lifespanMs: 600_000,
      now: 1_700_000_000_000,
      nonce: "8a7b5e20-0c1d-11ee-be56-0242ac120002",
    },
    query:
      "ak=netless-ak&expireAt=1700000600000&nonce=8a7b5e20-0c1d-11ee-be56-0242ac120002&role=1" +
      "&sig=9e6aa19d35e02574a21b8300927574e29b12845adbae162398feace5a4c878e3",
    token:
      "NETLESSSDK_YWs9bmV0bGVzcy1hayZleHBpcmVBdD0xNzAwMDAwNjAwMDAwJm5vbmNlPThhN2I1ZTIwLTBjMWQtMTFlZS1iZTU2LTAyNDJh" +
      "YzEyMDAwMiZyb2xlPTEmc2lnPTllNmFhMTlkMzVlMDI1NzRhMjFiODMwMDkyNzU3NGUyOWIxMjg0NWFkYmFlMTYyMzk4ZmVhY2U1YTRjODc4ZTM",
  },
  adminForeverWithOddAk: {
    input: { accessKey: "ak with spaces/é", secretKey: "sk", role: "admin", lifespanMs: 0, nonce: "n" },
    token:
      "NETLESSSDK_YWs9YWslMjB3aXRoJTIwc3BhY2VzJTJGJUMzJUE5Jm5vbmNlPW4mcm9sZT0wJnNpZz0zYzU3YTk2MzFkNzE3MjUwNTliMzBjOWUx" +
      "MWE3ZDkzNDkyNTNmZDYzYjM4YTNmMDlmMTdjMDYyMTkyYTY5OWU5",
  },
} as const;

const decode = (token: string): string =>
  Buffer.from(token.slice(SDK_TOKEN_PREFIX.length), "base64url").toString("utf8");

describe("createSdkToken", () => {
  it("matches the reference implementation byte for byte", () => {
    const { input, query, token } = KNOWN.writerWithExpiry;
    expect(createSdkToken(input)).toBe(token);
    expect(decode(token)).toBe(query);
    expect(createSdkToken(KNOWN.adminForeverWithOddAk.input)).toBe(KNOWN.adminForeverWithOddAk.token);
  });

  it("uses the reference's HMAC primitive (its published hmac256 test vector)", () => {
    expect(createHmac("sha256", "key").update("netless").digest("hex")).toBe(
      "4b007294b9ebeccb96fb1ef30c843b9894d6323375e042b1ef2775978225ca7f",
    );
  });

  it("defaults to the writer role, a random nonce and no expiry", () => {
    const a = decode(createSdkToken({ accessKey: "ak", secretKey: "sk" }));
    const b = decode(createSdkToken({ accessKey: "ak", secretKey: "sk" }));
    const fields = new URLSearchParams(a);
    expect([...fields.keys()]).toEqual(["ak", "nonce", "role", "sig"]);
    expect(fields.get("role")).toBe("1");
    expect(fields.get("nonce")).toMatch(/^[0-9a-f-]{36}$/);
    expect(a).not.toBe(b);
  });

  it("encodes roles as the reference's numbers and has no base64 padding", () => {
    for (const [role, code] of [
      ["admin", "0"],
      ["writer", "1"],
      ["reader", "2"],
    ] as const) {
      const token = createSdkToken({ accessKey: "ak", secretKey: "sk", role, nonce: "x" });
      expect(new URLSearchParams(decode(token)).get("role")).toBe(code);
      expect(token).toMatch(/^NETLESSSDK_[A-Za-z0-9_-]+$/);
    }
  });

  it("refuses a negative or fractional lifespan instead of minting an eternal token", () => {
    expect(() => createSdkToken({ accessKey: "ak", secretKey: "sk", lifespanMs: -1 })).toThrow(RangeError);
    expect(() => createSdkToken({ accessKey: "ak", secretKey: "sk", lifespanMs: 1.5 })).toThrow(RangeError);
  });
});

describe("verifySdkToken", () => {
  const secrets = new Map([
    ["netless-ak", "netless-sk"],
    ["ak", "sk"],
  ]);
  const lookup = (ak: string): string | undefined => secrets.get(ak);
  const reasonOf = (fn: () => unknown): string | undefined => {
    try {
      fn();
      return undefined;
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidSdkTokenError);
      return (error as InvalidSdkTokenError).reason;
    }
  };

  it("round-trips: returns the claims of a token it can check", () => {
    const { token, input } = KNOWN.writerWithExpiry;
    expect(verifySdkToken(token, lookup, input.now)).toEqual({
      ak: "netless-ak",
      role: "writer",
      expireAt: 1_700_000_600_000,
    });
    const forever = createSdkToken({ accessKey: "ak", secretKey: "sk", role: "reader" });
    expect(verifySdkToken(forever, lookup)).toEqual({ ak: "ak", role: "reader" });
  });

  it("rejects an expired token, at and after expireAt", () => {
    const { token } = KNOWN.writerWithExpiry;
    expect(reasonOf(() => verifySdkToken(token, lookup, 1_700_000_599_999))).toBeUndefined();
    expect(reasonOf(() => verifySdkToken(token, lookup, 1_700_000_600_000))).toBe("expired");
    expect(reasonOf(() => verifySdkToken(token, lookup, 1_800_000_000_000))).toBe("expired");
  });

  it("rejects a token signed with another secret or for an unknown key", () => {
    const wrongSecret = createSdkToken({ accessKey: "ak", secretKey: "not-sk" });
    expect(reasonOf(() => verifySdkToken(wrongSecret, lookup))).toBe("bad_signature");
    const unknown = createSdkToken({ accessKey: "who", secretKey: "sk" });
    expect(reasonOf(() => verifySdkToken(unknown, lookup))).toBe("unknown_key");
  });

  it("rejects a tampered token: a field changed after signing", () => {
    const { token, input } = KNOWN.writerWithExpiry;
    for (const tampered of [
      decode(token).replace("role=1", "role=0"), // promote to admin
      decode(token).replace("expireAt=1700000600000", "expireAt=1900000600000"), // live longer
      decode(token).replace("&sig=9", "&sig=8"),
    ]) {
      const forged = SDK_TOKEN_PREFIX + Buffer.from(tampered).toString("base64url");
      expect(reasonOf(() => verifySdkToken(forged, lookup, input.now))).toBe("bad_signature");
    }
  });

  it("rejects malformed tokens", () => {
    const valid = createSdkToken({ accessKey: "ak", secretKey: "sk" });
    const encode = (query: string): string => SDK_TOKEN_PREFIX + Buffer.from(query).toString("base64url");
    for (const token of [
      "",
      "NETLESSROOM_abc",
      valid.slice(SDK_TOKEN_PREFIX.length),
      `${valid}=`,
      `${valid}!`,
      encode("ak=ak&nonce=n&role=1"), // no sig
      encode("ak=ak&nonce=n&role=7&sig=00"), // unknown role
      encode(`${decode(valid)}&extra=1`),
      encode(`${decode(valid)}&ak=other`), // duplicate field
      encode("ak=%E0%A4%A&nonce=n&role=1&sig=00"), // bad percent-encoding
    ]) {
      expect(
        reasonOf(() => verifySdkToken(token, lookup)),
        token,
      ).toBe("malformed");
    }
  });
});
