/**
 * PASSPHRASE_KEYS and SECRETS_KEYS set to boardline's fixed development keys. The bench starts
 * boardline with NODE_ENV=production, which requires both, while its own in-process store (seeding
 * channels and projects) uses the development key ring, as any start without the variables does:
 * given these, the server reads what the bench wrote. Run as a script, it prints them as
 * `NAME=value` lines for the shell scripts (`mapfile -t KEYS < <(node bench/lib/development-keys.mjs)`).
 */

import { pathToFileURL } from "node:url";
import { developmentKeyRing } from "./boardline.mjs";

/** @param {string} name */
const base64 = (name) => developmentKeyRing(name).current.bytes.toString("base64");

/** @type {Readonly<Record<"PASSPHRASE_KEYS" | "SECRETS_KEYS", string>>} */
export const DEVELOPMENT_KEYS = {
  PASSPHRASE_KEYS: base64("PASSPHRASE_KEYS"),
  SECRETS_KEYS: base64("SECRETS_KEYS"),
};

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const [name, value] of Object.entries(DEVELOPMENT_KEYS)) process.stdout.write(`${name}=${value}\n`);
}
