/**
 * A kept answer that holds secrets (CreateChannel's passphrases), sealed before
 * it goes to the store: AES-256-GCM under a key derived (HKDF-SHA256) from the
 * Idempotency-Key and the caller's project and subject. The store holds only
 * the sha256 of the subject and key in the record's name, never the key, so a
 * Redis dump alone does not open the answer; a retry, which sends the key
 * again, does. A guessable key (`1`) makes a guessable seal: use a UUID.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import type { IdempotencyScope } from "./ports.js";

const PREFIX = "sealed1.";
const IV_BYTES = 12;
const TAG_BYTES = 16;

function keyOf(scope: IdempotencyScope, purpose: string): Buffer {
  const salt = `${scope.project}\0${scope.subject}`;
  return Buffer.from(hkdfSync("sha256", scope.key, salt, `boardline kept answer: ${purpose}`, 32));
}

/** `text` sealed for `scope`; `purpose` (the method's name) keeps one method's seal from opening as another's. */
export function sealAnswer(scope: IdempotencyScope, purpose: string, text: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", keyOf(scope, purpose), iv);
  const sealed = Buffer.concat([cipher.update(text, "utf8"), cipher.final()]);
  return PREFIX + Buffer.concat([iv, sealed, cipher.getAuthTag()]).toString("base64url");
}

/** The text `sealAnswer` sealed for this scope and purpose; undefined for anything else. */
export function openAnswer(scope: IdempotencyScope, purpose: string, sealed: string): string | undefined {
  if (!sealed.startsWith(PREFIX)) return undefined;
  const bytes = Buffer.from(sealed.slice(PREFIX.length), "base64url");
  if (bytes.length < IV_BYTES + TAG_BYTES) return undefined;
  try {
    const decipher = createDecipheriv("aes-256-gcm", keyOf(scope, purpose), bytes.subarray(0, IV_BYTES));
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
    const body = bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES);
    return Buffer.concat([decipher.update(body), decipher.final()]).toString("utf8");
  } catch {
    return undefined;
  }
}
