/**
 * The rows marked `secret` in variables.ts, and their `NAME_FILE` form: a
 * secret may be given as the path of a file holding it, as the official
 * Postgres and Redis images allow, so Kubernetes and Compose mount secrets as
 * files rather than environment variables. read-variable.ts resolves the file.
 */
import { VARIABLES, type Variable, type VariableName } from "./variables.js";

/** The `NAME_FILE` form of a secret row: the path of a file whose content is the value. */
export function fileVariable(name: VariableName): string {
  return `${name}_FILE`;
}

/** The rows marked `secret`, each of which may be given as `NAME_FILE` instead. */
export const SECRET_VARIABLES: readonly VariableName[] = (Object.keys(VARIABLES) as VariableName[]).filter(
  (name) => (VARIABLES[name] as Variable).secret === true,
);

/** Whether boardline reads `name` from the environment: a row, or the `NAME_FILE` form of a secret row. */
export function readsVariable(name: string): boolean {
  return name in VARIABLES || SECRET_VARIABLES.some((secret) => fileVariable(secret) === name);
}
