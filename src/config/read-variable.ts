/**
 * Reads one environment variable through its row in variables.ts: its default,
 * its range or allowed values. A bad value is a ConfigError naming the variable.
 * A secret row may be given as `NAME_FILE` instead, the path of a file holding
 * the value (as the official Postgres and Redis images take theirs), so that
 * Kubernetes and Compose can mount secrets as files; every reader, and isSet,
 * sees such a value exactly as if it had been set directly.
 * The one reader of `host:port` lists (REDIS_CLUSTER_NODES, REDIS_SENTINELS) is here too.
 */
import { readFileSync } from "node:fs";
import type { RedisNodeAddress } from "../store/redis/connection.js";
import { fileVariable } from "./secret-variables.js";
import { VARIABLES, type Variable, type VariableName } from "./variables.js";

export type Env = Readonly<Record<string, string | undefined>>;

/** An invalid configuration value: one line naming the variable, which stops start-up. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable} ${problem}`);
  }
}

type Rows = typeof VARIABLES;
/** The names of the rows of one kind (and shape). */
type NamesOf<Shape> = { [N in VariableName]: Rows[N] extends Shape ? N : never }[VariableName];

/** `value` trimmed unless the row says otherwise, or undefined when unset or blank. */
function normalized(row: Variable, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (row.kind === "text" && row.untrimmed === true) return value === "" ? undefined : value;
  return value.trim() === "" ? undefined : value.trim();
}

/**
 * The value as set, or for a secret row the content of the file `NAME_FILE` names
 * (an empty or blank `NAME_FILE` counts as not set, as any variable does).
 */
function rawValue(env: Env, name: VariableName): string | undefined {
  const row: Variable = VARIABLES[name];
  const direct = normalized(row, env[name]);
  const path = row.secret === true ? env[fileVariable(name)]?.trim() : undefined;
  if (path === undefined || path === "") return direct;
  if (direct !== undefined) {
    throw new ConfigError(name, `and ${fileVariable(name)} are both set: set one of them`);
  }
  const content = normalized(row, withoutFinalNewline(readSecretFile(name, path)));
  // A secret file with nothing in it is a mistake in the mount, not a wish to leave the variable unset.
  if (content === undefined) throw new ConfigError(fileVariable(name), `names an empty file (${path})`);
  return content;
}

/** The file's text; an unreadable file is a ConfigError with the errno code (never any content). */
function readSecretFile(name: VariableName, path: string): string {
  try {
    return readFileSync(path, "utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? "error";
    throw new ConfigError(fileVariable(name), `cannot be read (${code}: ${path})`);
  }
}

/**
 * Without one final `\n` or `\r\n`: files written by `echo` or an editor end
 * with one (and so do Secrets made from such files), and it is not part of the
 * secret. An `untrimmed` secret keeps every other character.
 */
function withoutFinalNewline(text: string): string {
  return text.replace(/\r?\n$/, "");
}

/**
 * A bad value of `name`; said to come from `NAME_FILE` when it did, so the
 * operator looks at the right place. The value itself is never in a message
 * about a secret row.
 */
function invalid(env: Env, name: VariableName, problem: string): ConfigError {
  const row: Variable = VARIABLES[name];
  const fromFile = row.secret === true && (env[fileVariable(name)]?.trim() ?? "") !== "";
  return new ConfigError(name, fromFile ? `${problem} (read from ${fileVariable(name)})` : problem);
}

/** Whether the variable is set to a non-blank value. */
export function isSet(env: Env, name: VariableName): boolean {
  return rawValue(env, name) !== undefined;
}

export function readInteger(env: Env, name: NamesOf<{ kind: "integer" }>): number {
  const { default: fallback, min, max } = VARIABLES[name];
  const raw = rawValue(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw)) throw invalid(env, name, `must be a whole number from ${min} to ${max} (got "${raw}")`);
  const n = Number(raw);
  if (n < min || n > max) throw invalid(env, name, `must be a whole number from ${min} to ${max} (got ${raw})`);
  return n;
}

export function readChoice(env: Env, name: NamesOf<{ kind: "choice" }>): string {
  const { default: fallback, values } = VARIABLES[name];
  const value = rawValue(env, name) ?? fallback;
  if (!values.includes(value)) throw invalid(env, name, `must be one of ${values.join(", ")}`);
  return value;
}

/** Text (or a file's path): the value, checked, else the row's default. */
export function readText(env: Env, name: NamesOf<{ kind: "text"; default: string }>): string;
export function readText(env: Env, name: NamesOf<{ kind: "text" | "file" }>): string | undefined;
export function readText(env: Env, name: NamesOf<{ kind: "text" | "file" }>): string | undefined {
  const row: Variable = VARIABLES[name];
  const value = rawValue(env, name);
  if (row.kind !== "text") return value;
  if (value === undefined) return row.default;
  const problem = row.check?.(value);
  if (problem !== undefined) throw invalid(env, name, problem);
  return value;
}

/** An absolute http(s) URL, checked, else the row's default. */
export function readHttpUrl(env: Env, name: NamesOf<{ kind: "http-url" }>): string | undefined {
  const row: Variable = VARIABLES[name];
  const value = rawValue(env, name);
  if (value === undefined) return row.kind === "http-url" ? row.default : undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalid(env, name, `must be an absolute http(s) URL (got "${value}")`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw invalid(env, name, `must be an http or https URL (got "${value}")`);
  }
  const problem = row.kind === "http-url" ? row.check?.(url) : undefined;
  if (problem !== undefined) throw invalid(env, name, problem);
  return value;
}

/** The non-empty items of a comma-separated list, each checked; undefined when there are none. */
export function readList(env: Env, name: NamesOf<{ kind: "list" }>): string[] | undefined {
  const { check } = VARIABLES[name];
  const items = (rawValue(env, name) ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  for (const item of items) {
    const problem = check(item);
    if (problem !== undefined) throw invalid(env, name, problem);
  }
  return items.length === 0 ? undefined : items;
}

/** A `host[:port]` list; the port defaults to the row's. */
export function readHostPorts(env: Env, name: NamesOf<{ kind: "hosts" }>): RedisNodeAddress[] | undefined {
  const raw = rawValue(env, name);
  return raw === undefined ? undefined : parseHostPorts(name, raw, VARIABLES[name].defaultPort);
}

/** `host`, `host:port`, `[ipv6]` or `[ipv6]:port`; a host has no colon, bracket or white space. */
const HOST_PORT = /^(?:\[([^\]]+)\]|([^:[\]\s]+))(?::(\d{1,5}))?$/;

/**
 * Parses `host:port,host:port` (IPv6 in brackets, `[::1]:7000`; a missing port
 * is `defaultPort`). Empty entries are skipped, but the list must name at least
 * one node. Throws a ConfigError naming `variable` and the entry it cannot read.
 */
export function parseHostPorts(variable: string, list: string, defaultPort: number): RedisNodeAddress[] {
  const entries = list
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  if (entries.length === 0) throw new ConfigError(variable, "must list at least one host:port");
  return entries.map((entry) => {
    const match = HOST_PORT.exec(entry);
    const host = match?.[1] ?? match?.[2];
    const port = match?.[3] === undefined ? defaultPort : Number(match[3]);
    if (host === undefined || port < 1 || port > 65535) {
      throw new ConfigError(variable, `must be a comma-separated list of host:port (got "${entry}")`);
    }
    return { host, port };
  });
}
