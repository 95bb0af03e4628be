/**
 * PASSPHRASE_KEYS and SECRETS_KEYS set to the fixed development keys, for a
 * process started with NODE_ENV=production (which refuses to fall back to
 * them): it then reads and writes the same records as the CLI, the in-process
 * stores and the instances the tests start without the variables.
 */
import { developmentKeyRing } from "../../src/secrets/key-ring.js";

const base64 = (name: string) => developmentKeyRing(name).current.bytes.toString("base64");

export const DEVELOPMENT_KEYS: Readonly<Record<"PASSPHRASE_KEYS" | "SECRETS_KEYS", string>> = {
  PASSPHRASE_KEYS: base64("PASSPHRASE_KEYS"),
  SECRETS_KEYS: base64("SECRETS_KEYS"),
};
