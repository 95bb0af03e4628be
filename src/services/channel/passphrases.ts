/**
 * Passphrases of channels managed through the API (ChannelAdminService):
 * generated ones, and the minimum strength of chosen ones. A passphrase is
 * stored as its unsalted sha256 (the `pass:` key names), so a weak one falls
 * to anyone holding a Redis dump: hence the rule, documented in docs/security.md
 * ("Passphrases and the guessing limit").
 */
import { randomBytes } from "node:crypto";
import { Failure } from "../failure.js";

/** 32 characters, lower case, without the look-alikes l, o, 0 and 1: readable aloud and in a link, URL-safe. */
const ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789";
/** 28 characters of 5 bits each: 140 bits from the CSPRNG (the issue asks for at least 128). */
const GENERATED_CHARACTERS = 28;

export const MIN_PASSPHRASE_LENGTH = 16;
export const MAX_PASSPHRASE_LENGTH = 256;
const MIN_DISTINCT_CHARACTERS = 8;

/**
 * A new random passphrase: 28 characters in groups of four joined by `-`
 * (`k3vq-…`, 34 characters). 256 is a multiple of 32, so `byte & 31` is unbiased.
 */
export function generatePassphrase(): string {
  const chars = [...randomBytes(GENERATED_CHARACTERS)].map((b) => ALPHABET[b & 31] as string);
  const groups: string[] = [];
  for (let i = 0; i < chars.length; i += 4) groups.push(chars.slice(i, i + 4).join(""));
  return groups.join("-");
}

/**
 * Why a chosen passphrase is too weak, or undefined: 16 to 256 characters (code
 * points, as protovalidate counts), no control characters, at least two kinds
 * of character (lower case, upper case, digits, anything else) and at least 8
 * different characters. Generated passphrases always pass.
 */
export function passphraseWeakness(passphrase: string): string | undefined {
  const chars = [...passphrase];
  if (chars.length < MIN_PASSPHRASE_LENGTH) return `must be at least ${MIN_PASSPHRASE_LENGTH} characters`;
  if (chars.length > MAX_PASSPHRASE_LENGTH) return `must be at most ${MAX_PASSPHRASE_LENGTH} characters`;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this refuses
  if (/[\x00-\x1f\x7f-\x9f]/.test(passphrase)) return "must not contain control characters";
  const kinds = [/[a-z]/, /[A-Z]/, /[0-9]/, /[^a-zA-Z0-9]/].filter((kind) => kind.test(passphrase)).length;
  if (kinds < 2) return "must mix at least two kinds of character (lower case, upper case, digits, others)";
  if (new Set(chars).size < MIN_DISTINCT_CHARACTERS)
    return `must contain at least ${MIN_DISTINCT_CHARACTERS} different characters`;
  return undefined;
}

/** The chosen passphrase of `field`, checked (`invalid` naming the field), or a generated one. */
export function chosenOrGenerated(field: string, chosen: string | undefined): string {
  if (chosen === undefined) return generatePassphrase();
  const weakness = passphraseWeakness(chosen);
  if (weakness !== undefined) throw new Failure("invalid", { detail: `${field}: ${weakness}` });
  return chosen;
}
