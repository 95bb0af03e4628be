/**
 * The CLI's way into ChannelAdminService's domain, so both take one code path:
 * `channel create|delete|rotate|show|list` and `whiteboard set|show|clear`
 * call the same service functions as the RPCs, as an in-process operator
 * caller — the project named on the command line, `sub` "cli", every scope.
 * The request is checked by the contract's rules (protovalidate) as an RPC's
 * is, then by the domain. What the input got wrong is a usage error (exit 2);
 * any other refusal is the domain's one line (exit 1), naming flags, not fields.
 */
import { create, type DescMessage, type MessageInitShape, type MessageShape } from "@bufbuild/protobuf";
import { createValidator } from "@bufbuild/protovalidate";
import type { Command } from "commander";
import { loadChannelDefaultTtlMs } from "../config/index.js";
import { ChannelAdmin } from "../services/channel/admin.js";
import { WhiteboardSettingsAdmin } from "../services/channel/whiteboard-settings.js";
import { isFailure } from "../services/failure.js";
import { retryLockMs, SafeRetries } from "../services/idempotency/safe-retries.js";
import { ALL_SCOPES, type Caller } from "../services/ports.js";
import type { RedisStore } from "../store/redis/store.js";
import { usage } from "./arguments.js";
import { CliFailure, configOrFail } from "./cli-failure.js";
import { withStore } from "./redis-session.js";

/** The `sub` the CLI's changes are audited (and stamped) with. */
export const CLI_SUBJECT = "cli";

export interface AdminSession {
  readonly caller: Caller;
  readonly channels: ChannelAdmin;
  readonly whiteboard: WhiteboardSettingsAdmin;
  readonly store: RedisStore;
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Opens the store (redis-session.ts), builds the domain over it with the
 * server's CHANNEL_DEFAULT_TTL_HOURS, and runs `work` as the operator of
 * `project`. A domain `invalid` becomes a usage error of `cmd`.
 */
export async function withAdmin<T>(
  cmd: Command,
  project: string,
  work: (admin: AdminSession) => Promise<T>,
  env: Env = process.env,
): Promise<T> {
  const defaultTtlMs = configOrFail(() => loadChannelDefaultTtlMs(env));
  try {
    return await withStore((store) => {
      // The CLI sends no Idempotency-Key: the safe-retries machinery is there because the domain takes it.
      const retries = new SafeRetries(store.idempotency, retryLockMs(0, 1000));
      return work({
        caller: { project, subject: CLI_SUBJECT, scopes: new Set(ALL_SCOPES) },
        channels: new ChannelAdmin(store, retries, { defaultTtlMs }),
        whiteboard: new WhiteboardSettingsAdmin(store),
        store,
      });
    }, env);
  } catch (e) {
    if (isFailure(e) && e.kind === "invalid") usage(cmd, asFlags(e.detail ?? "invalid input"));
    // The domain's words (e.g. already_exists, failed_precondition), with the CLI's flag names.
    if (isFailure(e) && e.detail !== undefined) throw new CliFailure(asFlags(e.detail));
    throw e;
  }
}

const validator = createValidator();

/** The request message, checked by the contract's rules as the server checks an RPC's (a usage error of `cmd` naming the flag). */
export function request<D extends DescMessage>(cmd: Command, schema: D, init: MessageInitShape<D>): MessageShape<D> {
  const message = create(schema, init);
  const result = validator.validate(schema, message);
  if (result.kind === "valid") return message;
  if (result.kind === "error") throw result.error;
  const first = result.violations[0];
  const field = first?.field.map((p) => ("name" in p && typeof p.name === "string" ? p.name : "")).join(".") ?? "";
  usage(cmd, asFlags(`${field === "" ? "" : `${field}: `}${first?.message ?? "invalid"}`));
}

/** The API's field names in a message, as the CLI's flags and arguments. */
const FLAGS: ReadonlyArray<[RegExp, string]> = [
  [/^host_passphrase:/, "--host-passphrase:"],
  [/^attendee_passphrase:/, "--attendee-passphrase:"],
  [/^passphrase:/, "--passphrase:"],
  [/^expire_time:/, "--expire-time:"],
  [/^channel_id:/, "channel:"],
  [/^page_size:/, "--page-size:"],
  [/^page_token:/, "--page-token:"],
  [/^conversion_qps:/, "--conversion-qps:"],
];

function asFlags(detail: string): string {
  for (const [field, flag] of FLAGS) if (field.test(detail)) return detail.replace(field, flag);
  return detail;
}

/** Runs `call`; a `not_found` answers `undefined` (the command says what was not found, in its words). */
export async function unlessNotFound<T>(call: () => Promise<T>): Promise<T | undefined> {
  try {
    return await call();
  } catch (e) {
    if (isFailure(e) && e.kind === "not_found") return undefined;
    throw e;
  }
}

/** A channel the project does not have (or one written before the channel index: `channel reindex` finds it). */
export function notFound(project: string, channel: string, outcome: string): CliFailure {
  return new CliFailure(`channel ${channel} of project ${project} not found (${outcome})`);
}
