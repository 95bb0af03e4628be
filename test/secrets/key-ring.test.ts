import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config/index.js";
import { checkKeyText, developmentKeyRing, keyRing } from "../../src/secrets/key-ring.js";
import { configError, SECRET } from "../config/helpers.js";

const KEY_A = Buffer.alloc(32, 1).toString("base64");
const KEY_B = Buffer.alloc(32, 2).toString("base64");
const PRODUCTION = { NODE_ENV: "production", REDIS_URL: "redis://r:6379", JWT_SECRET: SECRET };

describe("key rings", () => {
  it("name each key by an id derived from it, the first one current", () => {
    const ring = keyRing([KEY_A, KEY_B]);
    expect(ring.current.id).toMatch(/^[0-9a-f]{8}$/);
    expect(ring.current.id).not.toBe(ring.keys[1]?.id);
    expect(keyRing([KEY_B]).current.id).toBe(ring.keys[1]?.id);
    expect(ring.byId(ring.keys[1]?.id ?? "")?.bytes).toEqual(Buffer.alloc(32, 2));
  });

  it("refuse short or non-base64 keys without echoing them", () => {
    expect(checkKeyText(Buffer.alloc(31).toString("base64"))).toBe("must decode to at least 32 bytes");
    expect(checkKeyText("not base64!")).toBe("must be base64");
    const e = configError({ PASSPHRASE_KEYS: "short-secret-text" });
    expect(e.variable).toBe("PASSPHRASE_KEYS");
    expect(e.message).not.toContain("short-secret-text");
  });

  it("are required in production, one variable at a time", () => {
    expect(configError(PRODUCTION).message).toMatch(/^PASSPHRASE_KEYS is required when NODE_ENV=production/);
    expect(configError({ ...PRODUCTION, PASSPHRASE_KEYS: KEY_A }).message).toMatch(/^SECRETS_KEYS is required/);
    const config = loadConfig({ ...PRODUCTION, PASSPHRASE_KEYS: `${KEY_A}, ${KEY_B}`, SECRETS_KEYS: KEY_B });
    expect(config.passphraseKeys.keys.map((k) => k.id)).toEqual(keyRing([KEY_A, KEY_B]).keys.map((k) => k.id));
    expect(config.developmentKeys).toEqual([]);
  });

  it("fall back to the fixed development keys outside production, and say which", () => {
    const config = loadConfig({ REDIS_URL: "redis://r:6379", JWT_SECRET: SECRET, SECRETS_KEYS: KEY_A });
    expect(config.developmentKeys).toEqual(["PASSPHRASE_KEYS"]);
    expect(config.passphraseKeys.current.id).toBe(developmentKeyRing("PASSPHRASE_KEYS").current.id);
    expect(loadConfig({}).developmentKeys).toEqual(["PASSPHRASE_KEYS", "SECRETS_KEYS"]);
  });
});
