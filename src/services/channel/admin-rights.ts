/**
 * What every ChannelAdminService call checks first, and what each change
 * leaves behind: the `channels.admin` scope, and the audit entry.
 */
import { Failure } from "../failure.js";
import { type Caller, CHANNELS_ADMIN_SCOPE } from "../ports.js";
import type { AdminEvent, ChannelDirectory } from "./ports.js";
import { TokenRefused } from "../token-refusal.js";

const NEEDS_ADMIN_SCOPE = `managing channels and whiteboard settings needs a token with the scope ${CHANNELS_ADMIN_SCOPE}`;

/** `permission_denied` unless the caller holds `channels.admin`. Scopes only add rights; the project is the token's. */
export function requireAdmin(caller: Caller): void {
  if (!caller.scopes.has(CHANNELS_ADMIN_SCOPE))
    throw new Failure("permission_denied", { detail: NEEDS_ADMIN_SCOPE, cause: new TokenRefused("missing_scope") });
}

/**
 * Appends the change to the project's admin stream once it is made: who (the
 * token's `sub`), what, when — never a passphrase or a secret. A failure to
 * append fails the call (503: the change is made, its record is not), so no
 * change is answered as done without its audit entry.
 */
export function audit(
  channels: ChannelDirectory,
  caller: Caller,
  at: number,
  event: Omit<AdminEvent, "at" | "by">,
): Promise<void> {
  return channels.audit(caller.project, { at, by: caller.subject, ...event });
}
