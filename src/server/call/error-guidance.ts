/**
 * What a caller does with each row of the error table (error-table.ts), keyed
 * by the same kinds, so a new kind does not compile until it says what its
 * caller should do. docs/errors.md is rendered from both (tools/errors-doc.ts);
 * the server itself never reads this file.
 */
import type { FailureKind } from "../../services/failure.js";
import type { TransportFailure } from "./error-table.js";

export interface ErrorGuidance {
  /** What a caller does when it gets this answer. */
  readonly callerAction: string;
  /** The operations' own cases, where the row's `when` leaves them to each operation's description. */
  readonly cases?: readonly string[];
}

const FIX_THE_REQUEST = "sent again unchanged, it fails the same way";

/** The guidance, by the error table's kinds (domain failures and transport failures). */
export const guidance: Readonly<Record<FailureKind | TransportFailure["kind"], ErrorGuidance>> = {
  invalid: {
    callerAction: `Fix the request (the message names the field when there is one): ${FIX_THE_REQUEST}.`,
    cases: [
      "ConvertFile: a malformed `Idempotency-Key`",
      "gRPC: a request message that is not valid protobuf, or one over the size limit (`…: the request message is over the size limit`)",
    ],
  },
  unauthenticated: {
    callerAction:
      "Get a fresh token: this one is missing, malformed, expired or signed with a key boardline does not know. Retrying the same token never helps.",
    cases: [
      "a token whose project claim (`JWT_PROJECT_CLAIM`) is empty or holds `/`, `{`, `}` or a control character: its issuer must mint project ids without them",
      "a conversion webhook whose `sig` is missing or wrong (a plain endpoint: no gRPC code)",
    ],
  },
  permission_denied: {
    callerAction: "Do not retry: the passphrase or the token's scope does not allow it. Tell the user or the operator.",
    cases: [
      "ConvertFile: the whiteboard is not set up for the caller's project",
      "Mute, MuteAll, LowerHands, SetPstnPolicy: the passphrase is unknown, not the host passphrase, or of another project",
      "SetPstnPolicy: a `channel_id` with a token without the scope `channels.admin`",
      "ReportLine and SyncLine without a token of the scope `pstn.gateway`",
      "GetPstnState: the passphrase is unknown or of another project, or a `channel_id` with a token without the scope `pstn.gateway`",
      "WatchPstnEvents without a token of the scope `pstn.gateway`",
      "ChannelAdminService without a token of the scope `channels.admin`",
    ],
  },
  not_found: {
    callerAction: `Check the id or passphrase the request names: ${FIX_THE_REQUEST}.`,
    cases: [
      "ConvertFile: the passphrase is unknown or of another project",
      "a conversion task unknown or of another project",
      "ChannelAdminService: a channel unknown or of another project; no whiteboard settings to get",
    ],
  },
  rate_limited: {
    callerAction:
      "Wait `retry_after_seconds` (the ErrorInfo's metadata; `Retry-After` on JSON) plus a little random jitter, then retry. Without it (too many channels in one watch) the request itself is too big: split it over several watches.",
  },
  queue_full: {
    callerAction:
      "Wait `retry_after_seconds` (the ErrorInfo's metadata; `Retry-After` on JSON), the time the queue takes to drain at the project's pace, then retry; or ask the operator for a higher `conversion_qps` (the project's whiteboard settings) if it happens often.",
  },
  failed_precondition: {
    callerAction: `Change the request, or the resource's state first: ${FIX_THE_REQUEST}.`,
    cases: [
      "CancelConversion: a task of the legacy conversion API",
      "CreateChannel or RotatePassphrase: a chosen passphrase already opens a channel of the project",
      "RotatePassphrase: a role the channel has no passphrase for",
    ],
  },
  already_exists: {
    callerAction: `Do not create it again: read the channel that exists, or choose another id; ${FIX_THE_REQUEST}.`,
  },
  out_of_range: {
    callerAction:
      "Take a new snapshot (GetPstnState) and watch from its `as_of_event_id`: resumed from the same cursor, the watch fails the same way.",
  },
  idempotency_key_busy: {
    callerAction: "Wait `retry_after_seconds` and retry with the same `Idempotency-Key`.",
  },
  idempotency_key_reused: {
    callerAction: `Use a new \`Idempotency-Key\` for a new request; ${FIX_THE_REQUEST}.`,
  },
  unavailable: {
    callerAction:
      "Retry with exponential back-off (say 100 ms doubling to 5 s, jittered, within your own deadline), no sooner than `Retry-After` when it is given. A write's outcome is unknown: a Mute or a MuteAll sets a state, and a ReportLine or SyncLine sent again with the same `sequence` is answered as a duplicate, so repeating them is safe; repeat a ConvertFile only with the same `Idempotency-Key`.",
  },
  deadline_exceeded: {
    callerAction:
      "Retry with back-off, as for UNAVAILABLE: the backend may have started the conversion, so repeat a ConvertFile only with the same `Idempotency-Key`.",
    cases: ["the backend took longer than `CONVERSION_TIMEOUT_MS`"],
  },
  internal: {
    callerAction:
      "Retry once or twice with back-off; if it persists, report it with the answer's `X-Request-Id`: the server logged the cause under that id.",
  },
  no_route: {
    callerAction: "Fix the path: no route has it.",
  },
  method_not_allowed: {
    callerAction: "Send the request with the method `Allow` names.",
  },
  body_too_large: {
    callerAction: "Send a smaller body: the limit is the server's `MAX_BODY_BYTES`.",
  },
  unsupported_media_type: {
    callerAction: "Send the body as `Content-Type: application/json`.",
  },
};
