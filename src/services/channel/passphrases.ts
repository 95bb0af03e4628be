/**
 * Passphrases of channels managed through the API (ChannelAdminService):
 * generated ones, and the minimum strength of chosen ones. The guessing limit
 * slows guesses through the API and the keyed digest stops guesses against a
 * copy of Redis, but one who has both Redis and PASSPHRASE_KEYS can guess at
 * hashing speed: a chosen passphrase must hold out there too, so its strength
 * is estimated by zxcvbn (dictionaries, keyboard patterns, dates, repeats),
 * not counted by kinds of character (docs/security.md, "Passphrases").
 */
import { randomBytes } from "node:crypto";
import { ZxcvbnFactory } from "@zxcvbn-ts/core";
import { adjacencyGraphs, dictionary } from "@zxcvbn-ts/language-common";
import { Failure } from "../failure.js";

/** 32 characters, lower case, without the look-alikes l, o, 0 and 1: readable aloud and in a link, URL-safe. */
const ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789";
/** 28 characters of 5 bits each: 140 bits from the CSPRNG (the issue asks for at least 128). */
const GENERATED_CHARACTERS = 28;

export const MIN_PASSPHRASE_LENGTH = 16;
export const MAX_PASSPHRASE_LENGTH = 256;
const MIN_DISTINCT_CHARACTERS = 8;
/**
 * Guesses (log10) zxcvbn must estimate a chosen passphrase takes at least:
 * 10^12, days of a GPU at an HMAC's speed for one passphrase, where the
 * generated ones take 2^140.
 */
export const MIN_GUESSES_LOG10 = 12;

/** Built on first use: loading the dictionaries takes a moment the server's start need not wait for. */
let estimator: ZxcvbnFactory | undefined;
function guessesLog10(passphrase: string): number {
  estimator ??= new ZxcvbnFactory({ dictionary, graphs: adjacencyGraphs });
  return estimator.check(passphrase).guessesLog10;
}

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
 * of character (lower case, upper case, digits, anything else), at least 8
 * different characters, and at least 10^MIN_GUESSES_LOG10 guesses by zxcvbn's
 * estimate. Generated passphrases always pass.
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
  if (guessesLog10(passphrase) < MIN_GUESSES_LOG10)
    return "is too easy to guess (common words, names, keyboard runs, dates or repeats): add unrelated words, or leave it out for a generated one";
  return undefined;
}

/** The chosen passphrase of `field`, checked (`invalid` naming the field), or a generated one. */
export function chosenOrGenerated(field: string, chosen: string | undefined): string {
  if (chosen === undefined) return generatePassphrase();
  const weakness = passphraseWeakness(chosen);
  if (weakness !== undefined) throw new Failure("invalid", { detail: `${field}: ${weakness}` });
  return chosen;
}
