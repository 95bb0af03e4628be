// Renders docs/errors.md from the error table (src/server/call/error-table.ts)
// and what a caller does with each row (src/server/call/error-guidance.ts).
// `npm run generate` writes it; test/docs/errors-doc.test.ts fails when the
// committed file is stale.

import { Code } from "@connectrpc/connect";
import { type ErrorGuidance, guidance } from "../src/server/call/error-guidance.js";
import {
  ERROR_DOMAIN,
  INVALID_REQUEST_MESSAGE,
  parserRefusalStatus,
  table,
  transportTable,
} from "../src/server/call/error-table.js";
import type { FailureKind } from "../src/services/failure.js";
import { cell, code } from "./markdown.js";

export const ERRORS_DOC = "docs/errors.md";

/** The gRPC status name as the gRPC spec spells it (`INVALID_ARGUMENT`). */
export function grpcName(status: Code): string {
  return Code[status].replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}

/** The row's `when`, then the operations' own cases. */
function whenColumn(when: string, advice: ErrorGuidance): string {
  if (advice.cases === undefined || advice.cases.length === 0) return when;
  return `${when} Cases: ${advice.cases.join("; ")}.`;
}

/** The Markdown table: the domain rows in the table's order, then the transport rows. */
export function renderErrorTable(): string {
  const lines = [
    "| kind | `ErrorInfo.reason` | HTTP | gRPC | `error.code` | when it happens | `Retry-After` | what a caller does |",
    "|---|---|---|---|---|---|---|---|",
  ];
  for (const kind of Object.keys(table) as FailureKind[]) {
    const row = table[kind];
    const advice = guidance[kind];
    const cells = [
      code(kind),
      code(row.reason),
      String(row.http),
      grpcName(row.grpc),
      String(row.code),
      whenColumn(row.when, advice),
      row.retryAfter ? "may" : "—",
      advice.callerAction,
    ];
    lines.push(`| ${cells.map(cell).join(" | ")} |`);
  }
  for (const kind of Object.keys(transportTable) as Array<keyof typeof transportTable>) {
    const row = transportTable[kind];
    const advice = guidance[kind];
    const cells = [
      code(kind),
      "—",
      String(row.http),
      "—",
      String(row.code),
      whenColumn(row.when, advice),
      "—",
      advice.callerAction,
    ];
    lines.push(`| ${cells.map(cell).join(" | ")} |`);
  }
  return lines.join("\n");
}

const refusals = [parserRefusalStatus("HPE_HEADER_OVERFLOW"), parserRefusalStatus("ERR_HTTP_REQUEST_TIMEOUT")];

/** The whole of docs/errors.md. */
export function renderErrorsDoc(): string {
  return `<!-- generated from src/server/call/error-table.ts and error-guidance.ts by \`npm run generate\`; edit those, not this file -->
# Errors

Every failure that leaves boardline is shaped by one table in the code, rendered below. A row is
found by its kind, never by its status: two kinds may share an HTTP status (409 is
FAILED_PRECONDITION, ALREADY_EXISTS or ABORTED), and the kind, the \`ErrorInfo.reason\` and the gRPC
code tell them apart.

## The error shape

On a JSON route, every failure has the body \`{"error":{"code":<int>,"message":<string>}}\`, where
\`code\` is the table's \`error.code\`. Connect, gRPC and gRPC-Web callers get the row's gRPC code, the
same message, and a \`google.rpc.ErrorInfo\` detail: \`reason\` is the row's \`ErrorInfo.reason\`,
\`domain\` is ${code(ERROR_DOMAIN)}, \`metadata.code\` is the \`error.code\`, and
\`metadata.retry_after_seconds\` is set whenever the JSON answer carries \`Retry-After\`. A 401 on
JSON carries \`WWW-Authenticate: Bearer realm="${ERROR_DOMAIN}"\`; a 405 carries \`Allow\`.

The message of \`error.code\` 611 is exactly ${code(INVALID_REQUEST_MESSAGE)}, followed by \`: \` and a
clause naming the field when there is one, e.g. \`…: mute: value is required\`. Internal errors never
carry stack traces, Redis errors or backend bodies; they are logged with the request id
(\`X-Request-Id\`). A gRPC message arrives byte for byte at \`@grpc/grpc-js\` clients too: boardline
percent-encodes \`grpc-message\` as the gRPC spec says.

The order of checks is authenticate → body → authorize → act, so an unauthenticated request with a
bad body gets 401.

## Error table

The transport rows (no gRPC code) are answered by the HTTP layer before a request reaches an
operation: on the JSON routes and the plain endpoints only.

${renderErrorTable()}

An HTTP/1.1 request the parser refuses before it becomes a request gets Node's own status line
(${refusals.map(code).join(", ")}, or ${code(parserRefusalStatus(undefined))}), no body, and the
connection closes.

The conversion backend's own answers map as: 5xx, 429 or no connection → 503; a time-out → 504; 400
→ 400 with \`error.code\` 611 (\`resource_url was rejected by the conversion backend\`); 401 or 403 → 500
(boardline's stored credentials are wrong, logged at error level).

## What a caller does with each error

The table's last column says it for each answer. One more case is not an error row: a watch that
ends (UNAVAILABLE, a dropped connection, the instance restarting). Reconnect with back-off and resume
from the \`cursor\` of the last event you processed (\`after\`; SSE: \`Last-Event-ID\`): nothing is missed.
The examples in \`examples/\` (Go, Python, a browser page) handle every answer this way, and CI makes
each case happen to each of them.

## Decisions where the contract was silent

A refused mute says the same thing whether the passphrase is unknown, an attendee's, or another
project's, so the answer is no oracle; a refused state read and a ConvertFile 404 likewise. A
conversion webhook with a right signature answers 204 whether or not its id is known. On gRPC, a
request message that is not valid protobuf is INVALID_ARGUMENT with the 611 message.
`;
}
