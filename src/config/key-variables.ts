/**
 * The rows of the two key rings boardline keeps its tenants' secrets under
 * (variables.ts, where they take their place last): PASSPHRASE_KEYS for the
 * passphrase index, SECRETS_KEYS for the Netless credentials. Kept apart for
 * the size of variables.ts; the same rules apply (see there), and
 * load-config.ts reads both (production requires them).
 */
import { checkKeyText } from "../secrets/key-ring.js";
import type { Variable } from "./variable-kinds.js";

export const KEY_VARIABLES = {
  PASSPHRASE_KEYS: {
    kind: "list",
    secret: true,
    defaultNote: "— (required when `NODE_ENV=production`; a fixed development key otherwise)",
    allowed:
      "comma-separated base64 keys of at least 32 random bytes (`openssl rand -base64 32`), the current one first",
    check: checkKeyText,
    meaning:
      'the keys of the passphrase index: a passphrase is found by HMAC-SHA256 under the current key of its project and its hash, so a copy of Redis cannot test guesses. Put a new key first and keep the old ones after it until `boardline channel reindex` reports none left under them (docs/security.md, "Rotating `PASSPHRASE_KEYS`")',
  },
  SECRETS_KEYS: {
    kind: "list",
    secret: true,
    defaultNote: "— (required when `NODE_ENV=production`; a fixed development key otherwise)",
    allowed:
      "comma-separated base64 keys of at least 32 random bytes (`openssl rand -base64 32`), the current one first",
    check: checkKeyText,
    meaning:
      "the keys that encrypt each project's Netless credentials in Redis (AES-256-GCM): new writes use the first, a read uses the key its value names. Put a new key first and keep the old ones after it until `boardline whiteboard reseal` has run with them; the CLI needs the servers' list (docs/security.md, \"Netless credentials at rest\")",
  },
} as const satisfies Record<string, Variable>;
