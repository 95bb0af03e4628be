// The prose of the OpenAPI document that no proto declaration carries: how the
// JSON routes read and write messages, the token, and the event-stream framing.
// Keep it true to docs/api.md ("The API"), docs/errors.md and docs/security.md ("Authentication").

import type { Schema } from "./rules.js";

export const INFO_DESCRIPTION = `boardline's JSON routes, generated from its protos (\`proto/whiteboard/v1\`, \`proto/channel/v1\`) by \`npm run generate\`.
Every operation is also an RPC, served on the same port over gRPC, gRPC-Web and Connect.

- Send \`Content-Type: application/json\` with a body. Field names are the proto field names (\`resource_url\`); the lowerCamelCase JSON names (\`resourceUrl\`) are accepted too, and unknown fields are ignored. Answers use the proto field names.
- 64-bit integers are decimal strings; timestamps are RFC 3339 strings; \`bytes\` are base64.
- Every failure has the body \`{"error": {"code": <int>, "message": <string>}}\`: \`code\` is 611 for an invalid request, else the HTTP status. A path no route has answers 404, a known path with another method 405 (with \`Allow\`).
- \`X-Request-Id\` (1–128 of \`[A-Za-z0-9._:-]\`) is echoed on every answer, or one is made up.`;

export const SECURITY_SCHEME: Schema = {
  type: "http",
  scheme: "bearer",
  bearerFormat: "JWT",
  description:
    "A JWT with `exp`, `sub` and the caller's project (claim `project_id` unless the server is configured otherwise). A token of one project never acts on another project's channels.",
};

export const SSE_FRAMING =
  "Each event has a `data:` line with the message as JSON (and an `id:` line where the operation says so), then an empty line; a comment line (`: keep-alive`) comes every 15 s so proxies keep a quiet stream open. The response ends after the last message. A failure before the first message is an ordinary error answer (below); a failure after it is an `event: error` whose `data:` is the error body, and then the end of the response.";

export const IDEMPOTENCY_KEY_TEXT =
  "Makes a retry safe (as the IETF Idempotency-Key header draft describes): the first call with a key does the work and its answer is kept with the key for `IDEMPOTENCY_TTL_HOURS` (default 24); a retry with the same key and the same request gets the same answer (same `task_uuid`, same `status`) without a second conversion. The same key with a different request is 422; while the first call is still working, or after it ended without knowing whether the backend started the task (a time-out), a retry is 409 with `Retry-After`. A call that failed before the backend was asked (or that the backend refused) keeps nothing: retry it with the same key. A key is the caller's own (its project and token subject); 1–255 printable ASCII characters, the draft's quoted form `\"…\"` accepted. Over gRPC, gRPC-Web and Connect: the `idempotency-key` metadata.";
