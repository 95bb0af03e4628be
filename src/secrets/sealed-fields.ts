/**
 * Secret record fields sealed at rest: AES-256-GCM under a key of a ring
 * (SECRETS_KEYS), as one compact string
 *
 *   v1.<key id>.<iv>.<ciphertext and tag>
 *
 * the key id as the ring names it (8 hex), the IV 12 random bytes, the
 * ciphertext followed by its 16-byte tag, both base64url. The associated data
 * binds the format, the key id, the project and the field name, so a sealed
 * value copied to another project's record, or to another field, does not
 * open. A value without that shape was written before values were sealed (or
 * by another writer that writes them in clear) and is read as it is.
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import type { KeyRing } from "./key-ring.js";

const VERSION = "v1";
const IV_BYTES = 12;
const TAG_BYTES = 16;
const SEALED = /^v1\.([0-9a-f]{8})\.([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{22,})$/;

/**
 * Why a stored value cannot be opened. Its message names the project, the
 * field and the key id — never the value, sealed or not.
 */
export class SealedFieldError extends Error {
  override readonly name = "SealedFieldError";
}

/** How a stored value is sealed: `clear` (written before sealing), or under the key of `keyId`. */
export type SealState = { readonly sealed: false } | { readonly sealed: true; readonly keyId: string };

export function sealState(stored: string): SealState {
  const m = SEALED.exec(stored);
  return m === null ? { sealed: false } : { sealed: true, keyId: m[1] as string };
}

/** `plaintext` sealed under the ring's current key, for `field` of `project`'s record. */
export function seal(ring: KeyRing, project: string, field: string, plaintext: string): string {
  const key = ring.current;
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv("aes-256-gcm", key.bytes, iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(associatedData(key.id, project, field));
  const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()]);
  return `${VERSION}.${key.id}.${iv.toString("base64url")}.${body.toString("base64url")}`;
}

/**
 * The clear value of a stored `field` of `project`'s record: a sealed one
 * opened with the key its id names, any other read as it is. Throws
 * SealedFieldError when that key is not in the ring, or the value does not
 * open (altered, or sealed for another project or field).
 */
export function open(ring: KeyRing, project: string, field: string, stored: string): string {
  const m = SEALED.exec(stored);
  if (m === null) return stored;
  const [, keyId, ivText, bodyText] = m as unknown as [string, string, string, string];
  const key = ring.byId(keyId);
  if (key === undefined) {
    throw new SealedFieldError(
      `${field} of project ${project} is sealed under key ${keyId}, which is missing from SECRETS_KEYS`,
    );
  }
  const body = Buffer.from(bodyText, "base64url");
  try {
    const decipher = createDecipheriv("aes-256-gcm", key.bytes, Buffer.from(ivText, "base64url"), {
      authTagLength: TAG_BYTES,
    });
    decipher.setAAD(associatedData(keyId, project, field));
    decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
    return Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]).toString(
      "utf8",
    );
  } catch {
    throw new SealedFieldError(
      `${field} of project ${project} does not open under key ${keyId}: altered, or sealed for another project or field`,
    );
  }
}

/** Whether a stored value should be sealed again: in clear, or under a key other than the current one. */
export function needsReseal(ring: KeyRing, stored: string): boolean {
  const state = sealState(stored);
  return !state.sealed || state.keyId !== ring.current.id;
}

function associatedData(keyId: string, project: string, field: string): Buffer {
  return Buffer.from(JSON.stringify(["boardline sealed field", VERSION, keyId, project, field]), "utf8");
}
