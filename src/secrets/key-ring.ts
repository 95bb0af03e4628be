/**
 * A list of secret keys of one purpose, the current one first and older ones
 * after it, so a new key can be brought in while records written under an
 * older one stay readable. Each key is named by an id derived from the key
 * itself (no name to choose, none to get wrong); records carry that id, never
 * the key. PASSPHRASE_KEYS and SECRETS_KEYS are such lists (docs/security.md).
 */
import { createHash, createHmac } from "node:crypto";

/** Bytes a key must have at least: 256 bits, what HMAC-SHA256 and AES-256 take. */
export const KEY_MIN_BYTES = 32;

export interface SecretKey {
  /** 8 hex characters naming the key in records; not a secret. */
  readonly id: string;
  readonly bytes: Buffer;
}

export class KeyRing {
  readonly current: SecretKey;
  readonly keys: readonly SecretKey[];

  constructor(keys: readonly SecretKey[]) {
    const [current] = keys;
    if (current === undefined) throw new Error("a key ring needs at least one key");
    this.current = current;
    this.keys = keys;
  }

  byId(id: string): SecretKey | undefined {
    return this.keys.find((k) => k.id === id);
  }
}

export function secretKey(bytes: Buffer): SecretKey {
  return { id: createHmac("sha256", bytes).update("boardline key id").digest("hex").slice(0, 8), bytes };
}

/** Why one item of a key list is not a key, or undefined when it is one. */
export function checkKeyText(text: string): string | undefined {
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) return "must be base64";
  if (Buffer.from(text, "base64").length < KEY_MIN_BYTES) return `must decode to at least ${KEY_MIN_BYTES} bytes`;
  return undefined;
}

/** A ring from a list's items (each base64, checked by `checkKeyText`). */
export function keyRing(items: readonly string[]): KeyRing {
  return new KeyRing(items.map((item) => secretKey(Buffer.from(item, "base64"))));
}

/**
 * The key of the demo and of a development start without one: derived from a
 * fixed text, so it protects nothing. Production refuses to start without a
 * key of its own.
 */
export function developmentKeyRing(purpose: string): KeyRing {
  return new KeyRing([secretKey(createHash("sha256").update(`boardline development key: ${purpose}`).digest())]);
}
