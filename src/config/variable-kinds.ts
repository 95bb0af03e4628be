/**
 * The kinds of environment variable the configuration table (variables.ts)
 * has, each with what its row must say.
 */
export interface Documented {
  /** The configuration table's "meaning" column (docs/configuration.md, "Variables"). */
  readonly meaning: string;
  /** The configuration table's "default" column when the default depends on the mode (otherwise the default itself, or —). */
  readonly defaultNote?: string;
  /**
   * The value is a secret: it may be given as `NAME_FILE` instead, the path of a file holding it
   * (read-variable.ts), and no error message shows it.
   */
  readonly secret?: true;
}

/** A whole number in [min, max]. */
export interface IntegerVariable extends Documented {
  readonly kind: "integer";
  readonly default: number;
  readonly min: number;
  readonly max: number;
}

/** One of a fixed set of words. */
export interface ChoiceVariable extends Documented {
  readonly kind: "choice";
  readonly default: string;
  readonly values: readonly string[];
}

/** A comma-separated list of `host[:port]` (see src/config/read-variable.ts). */
export interface HostsVariable extends Documented {
  readonly kind: "hosts";
  readonly defaultPort: number;
}

/** An absolute http:// or https:// URL; `check` says what else is wrong with it, if anything. */
export interface HttpUrlVariable extends Documented {
  readonly kind: "http-url";
  readonly default?: string;
  /** The configuration table's "allowed values" when `check` narrows them. */
  readonly allowed?: string;
  readonly check?: (url: URL) => string | undefined;
}

/** A comma-separated list; `check` says what is wrong with one item, if anything. */
export interface ListVariable extends Documented {
  readonly kind: "list";
  readonly allowed: string;
  readonly check: (item: string) => string | undefined;
}

/** A path to a file read at start-up. */
export interface FileVariable extends Documented {
  readonly kind: "file";
  readonly allowed: string;
}

/** Free text; `check` says what is wrong with it, if anything. */
export interface TextVariable extends Documented {
  readonly kind: "text";
  readonly allowed: string;
  readonly default?: string;
  readonly check?: (value: string) => string | undefined;
  /** Taken as given, spaces included (a secret); by default a value is trimmed. */
  readonly untrimmed?: true;
}

export type Variable =
  | IntegerVariable
  | ChoiceVariable
  | HostsVariable
  | HttpUrlVariable
  | ListVariable
  | FileVariable
  | TextVariable;
