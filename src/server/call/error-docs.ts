/**
 * The error table (error-table.ts) as the OpenAPI document lists it
 * (tools/openapi): one answer per HTTP status. Where two rows share a
 * status (409), the answer says when each happens and carries an example of
 * each; the examples are made by the functions that shape real answers.
 */
import { Failure, type FailureKind } from "../../services/failure.js";
import { table, toJsonError, transportError, transportTable } from "./error-table.js";

/** A failure answer of a JSON operation, as the OpenAPI document lists it (tools/openapi). */
export interface DocumentedJsonError {
  readonly status: number;
  readonly code: number;
  /** When it happens: the `when` of each row with this status, in the table's order. */
  readonly when: string;
  /** An example body per row, exactly as the server writes it, named by the row's `reason` (or kind). */
  readonly examples: ReadonlyArray<{ readonly name: string; readonly body: string }>;
  /** The response headers that may go with it (lower case). */
  readonly headers: readonly string[];
  /** Only an operation with a JSON body can answer it (413, 415). */
  readonly bodyOnly: boolean;
}

/**
 * Every failure a JSON operation may answer, one per HTTP status, from the rows
 * of the error table (a body over `maxBodyBytes` for 413). A wrong path or
 * method is not an answer of an operation, so 404 `no_route` and 405 are left out.
 */
export function documentedJsonErrors(maxBodyBytes: number): DocumentedJsonError[] {
  const domain = (Object.keys(table) as FailureKind[]).map((kind): DocumentedJsonError => {
    const row = table[kind];
    const answer = toJsonError(new Failure(kind, row.retryAfter ? { retryAfterSeconds: 1 } : {}));
    const headers = Object.keys(answer.headers);
    const examples = [{ name: row.reason, body: answer.body }];
    return { status: row.http, code: row.code, when: row.when, examples, headers, bodyOnly: false };
  });
  const bodyOnly = ([{ kind: "body_too_large", limit: maxBodyBytes }, { kind: "unsupported_media_type" }] as const).map(
    (f): DocumentedJsonError => {
      const answer = transportError(f);
      const row = transportTable[f.kind];
      const examples = [{ name: f.kind, body: answer.body }];
      return { status: row.http, code: row.code, when: row.when, examples, headers: [], bodyOnly: true };
    },
  );
  return mergeByStatus([...domain, ...bodyOnly]).sort((a, b) => a.status - b.status);
}

/** One answer per status: the rows' texts and examples together, their headers joined. */
function mergeByStatus(errors: readonly DocumentedJsonError[]): DocumentedJsonError[] {
  const byStatus = new Map<number, DocumentedJsonError>();
  for (const e of errors) {
    const seen = byStatus.get(e.status);
    if (seen === undefined) {
      byStatus.set(e.status, e);
      continue;
    }
    if (seen.code !== e.code || seen.bodyOnly !== e.bodyOnly) {
      throw new Error(`HTTP ${e.status}: rows with different error codes cannot share one documented answer`);
    }
    byStatus.set(e.status, {
      ...seen,
      when: `${seen.when} Or: ${e.when}`,
      examples: [...seen.examples, ...e.examples],
      headers: [...new Set([...seen.headers, ...e.headers])],
    });
  }
  return [...byStatus.values()];
}
