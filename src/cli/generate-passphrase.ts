/**
 * Passphrases `channel create --generate` makes.
 */
import { randomBytes } from "node:crypto";

/** A strong passphrase that is easy to read out: 24 characters from 32 (120 bits), no look-alikes. */
export function generatePassphrase(): string {
  const alphabet = "abcdefghijkmnpqrstuvwxyz23456789";
  const chars = [...randomBytes(24)].map((b) => alphabet[b & 31]);
  return [0, 4, 8, 12, 16, 20].map((i) => chars.slice(i, i + 4).join("")).join("-");
}
