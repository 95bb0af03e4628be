/**
 * Sealed record fields (src/secrets/sealed-fields.ts): AES-256-GCM under a
 * SECRETS_KEYS key, bound to its project and field, readable under an older
 * key of the ring, and a value in clear (written before sealing) read as it is.
 */
import { describe, expect, it } from "vitest";
import { loadSecretsKeys } from "../../src/config/index.js";
import { developmentKeyRing, keyRing } from "../../src/secrets/key-ring.js";
import { needsReseal, open, SealedFieldError, seal, sealState } from "../../src/secrets/sealed-fields.js";

const NEW = Buffer.alloc(32, 7).toString("base64");
const OLD = Buffer.alloc(32, 9).toString("base64");
const SECRET = "NETLESSSDK_c2VjcmV0LXRva2VuLXZhbHVl";

function failure(run: () => unknown): Error {
  try {
    run();
  } catch (e) {
    return e as Error;
  }
  throw new Error("expected a failure");
}

describe("sealed fields", () => {
  it("round-trip, with a fresh IV each time and nothing of the value in the sealed text", () => {
    const ring = keyRing([NEW]);
    const a = seal(ring, "acme", "sdk_token", SECRET);
    const b = seal(ring, "acme", "sdk_token", SECRET);
    expect(a).toMatch(/^v1\.[0-9a-f]{8}\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/);
    expect(a.split(".")[1]).toBe(ring.current.id);
    expect(a).not.toBe(b);
    expect(a).not.toContain(SECRET);
    expect(a).not.toContain(Buffer.from(SECRET).toString("base64url").slice(0, 12));
    expect(open(ring, "acme", "sdk_token", a)).toBe(SECRET);
    expect(open(ring, "acme", "sdk_token", b)).toBe(SECRET);
    expect(open(ring, "acme", "secret_key", seal(ring, "acme", "secret_key", "ü ∑ 🎤"))).toBe("ü ∑ 🎤");
    expect(sealState(a)).toEqual({ sealed: true, keyId: ring.current.id });
  });

  it("do not open for another project or another field", () => {
    const ring = keyRing([NEW]);
    const sealed = seal(ring, "acme", "secret_key", SECRET);
    for (const [project, field] of [
      ["other", "secret_key"],
      ["acme", "sdk_token"],
      ["acm", "esecret_key"],
    ] as const) {
      const e = failure(() => open(ring, project, field, sealed));
      expect(e).toBeInstanceOf(SealedFieldError);
      expect(e.message).toMatch(/does not open/);
      expect(e.message).not.toContain(SECRET);
    }
  });

  it("do not open once altered: IV, ciphertext, tag or key id", () => {
    const ring = keyRing([NEW, OLD]);
    const sealed = seal(ring, "acme", "sdk_token", SECRET);
    const [v, id, iv, body] = sealed.split(".") as [string, string, string, string];
    const flip = (text: string, at: number) => {
      const bytes = Buffer.from(text, "base64url");
      bytes[at] = (bytes[at] ?? 0) ^ 1;
      return bytes.toString("base64url");
    };
    const bodyBytes = Buffer.from(body, "base64url").length;
    const altered = [
      [v, id, flip(iv, 0), body],
      [v, id, iv, flip(body, 0)],
      [v, id, iv, flip(body, bodyBytes - 1)],
      [v, ring.keys[1]?.id, iv, body],
    ];
    for (const parts of altered) {
      expect(() => open(ring, "acme", "sdk_token", parts.join("."))).toThrow(SealedFieldError);
    }
  });

  it("fail clearly when the key is not in the ring, naming the key id and never the value", () => {
    const sealed = seal(keyRing([OLD]), "acme", "secret_key", SECRET);
    const e = failure(() => open(keyRing([NEW]), "acme", "secret_key", sealed));
    expect(e).toBeInstanceOf(SealedFieldError);
    expect(e.message).toBe(
      `secret_key of project acme is sealed under key ${keyRing([OLD]).current.id}, which is missing from SECRETS_KEYS`,
    );
    expect(e.message).not.toContain(sealed);
  });

  it("open values sealed under an older key of the ring; new ones are sealed under the current key", () => {
    const before = keyRing([OLD]);
    const sealed = seal(before, "acme", "sdk_token", SECRET);
    const rotated = keyRing([NEW, OLD]);
    expect(open(rotated, "acme", "sdk_token", sealed)).toBe(SECRET);
    expect(needsReseal(rotated, sealed)).toBe(true);
    const again = seal(rotated, "acme", "sdk_token", SECRET);
    expect(sealState(again)).toEqual({ sealed: true, keyId: rotated.current.id });
    expect(needsReseal(rotated, again)).toBe(false);
    expect(open(keyRing([NEW]), "acme", "sdk_token", again)).toBe(SECRET);
  });

  it("read a value in clear (written before sealing) as it is, and want it sealed", () => {
    const ring = keyRing([NEW]);
    for (const clear of [SECRET, "sk-plain", "v1.not-sealed", "v1.0123abcd.short.x"]) {
      expect(sealState(clear)).toEqual({ sealed: false });
      expect(open(ring, "acme", "secret_key", clear)).toBe(clear);
      expect(needsReseal(ring, clear)).toBe(true);
    }
  });

  it("use the CLI's SECRETS_KEYS as the server reads it: the development key unless set", () => {
    expect(loadSecretsKeys({}).current.id).toBe(developmentKeyRing("SECRETS_KEYS").current.id);
    expect(loadSecretsKeys({ SECRETS_KEYS: `${NEW},${OLD}` }).keys.map((k) => k.id)).toEqual(
      keyRing([NEW, OLD]).keys.map((k) => k.id),
    );
    expect(() => loadSecretsKeys({ NODE_ENV: "production" })).toThrow(/SECRETS_KEYS is required/);
  });
});
