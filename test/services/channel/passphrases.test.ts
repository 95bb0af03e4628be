/**
 * The strength rule of chosen passphrases (src/services/channel/passphrases.ts):
 * what a count of character kinds let through, zxcvbn's estimate refuses; what
 * is long and unpredictable passes; generated passphrases always pass.
 */
import { describe, expect, it } from "vitest";
import { generatePassphrase, passphraseWeakness } from "../../../src/services/channel/passphrases.js";

describe("chosen passphrases", () => {
  it.each([
    ["Password12345678", "a dictionary word and a digit run"],
    ["Qwertyuiop123456789", "a keyboard row"],
    ["Summer2026Summer2026", "a repeated word and year"],
    ["JohnSmith19800101", "a name and a date"],
  ])("refuses %s (%s), which the old kind-and-length rule accepted", (passphrase) => {
    expect(passphraseWeakness(passphrase)).toMatch(/^is too easy to guess/);
  });

  it.each(["correct horse battery staple", "Chosen-host-passphrase-1", "tram Ulm 7 ferret quietly"])(
    "accepts %s",
    (passphrase) => {
      expect(passphraseWeakness(passphrase)).toBeUndefined();
    },
  );

  it("keeps the length, control-character and variety rules before the estimate", () => {
    expect(passphraseWeakness("short")).toBe("must be at least 16 characters");
    expect(passphraseWeakness("aaaaaaaaaaaaaaaaaaaa")).toMatch(/two kinds|different characters/);
    expect(passphraseWeakness("tab\there and more words")).toBe("must not contain control characters");
  });

  it("generated passphrases always pass", () => {
    for (let i = 0; i < 50; i++) expect(passphraseWeakness(generatePassphrase())).toBeUndefined();
  });
});
