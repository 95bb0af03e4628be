/**
 * Every environment variable boardline reads, one row each: its default, the
 * values it accepts and what it means. The parser reads values through these
 * rows (see read-variable.ts), and the configuration table of
 * docs/configuration.md is generated from them (`npm run generate`), so neither can drift from this file.
 * The Redis rows are written in redis-variables.ts, the JWT rows in
 * jwt-variables.ts, the guessing limit's in guess-variables.ts, the watches'
 * in watch-variables.ts and the key rings' in key-variables.ts, and take their
 * place here.
 * Rules that tie several variables together live in load-config.ts,
 * redis-settings.ts and jwt-settings.ts.
 */
import { isOrigin, checkWebhookBase } from "./accepted-values.js";
import { GUESS_VARIABLES } from "./guess-variables.js";
import { JWT_VARIABLES } from "./jwt-variables.js";
import { KEY_VARIABLES } from "./key-variables.js";
import { REDIS_VARIABLES } from "./redis-variables.js";
import { LINE_VARIABLES } from "./line-variables.js";
import { WATCH_VARIABLES } from "./watch-variables.js";
import type { Variable } from "./variable-kinds.js";

export type * from "./variable-kinds.js";

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];
const CONVERSION_APIS = ["projector", "legacy"];
const BOOLEANS = ["false", "true"];

/** The rows, in the configuration table's order. A variable set to an empty (or blank) value counts as not set. */
export const VARIABLES = {
  PORT: {
    kind: "integer",
    default: 8080,
    min: 0,
    max: 65535,
    meaning: "the one port for every protocol (0 = any free port)",
  },
  METRICS_PORT: {
    kind: "integer",
    default: 9090,
    defaultNote: "`9090` (demo mode: none, `/metrics` on `PORT`)",
    min: 0,
    max: 65535,
    meaning:
      "the port of `HOST` that serves `GET /metrics` (rendering it costs CPU, so it stays off the public port: `PORT` answers it 404), and `/healthz` and `/readyz`, which `PORT` answers too (this port closes last in a drain) (0 = any free port)",
  },
  METRICS_ON_PUBLIC_PORT: {
    kind: "choice",
    default: "false",
    values: BOOLEANS,
    meaning:
      "`true`: `/metrics` on `PORT`, open (with its CPU cost) to whoever reaches that port, and no metrics port: `METRICS_PORT` set too stops start-up. Demo mode does this unasked: it runs alone on a laptop",
  },
  HOST: {
    kind: "text",
    default: "0.0.0.0",
    defaultNote: "`0.0.0.0` (`127.0.0.1` in demo mode)",
    allowed: "an IP address or host name",
    meaning: "listen address",
  },
  NODE_ENV: {
    kind: "text",
    allowed: "`production`, or anything else",
    meaning:
      "`production`: no demo, no in-memory store; `REDIS_URL` (or cluster/sentinel) and a JWT key source are required",
  },
  ...REDIS_VARIABLES,
  ...JWT_VARIABLES,
  CONVERSION_API_BASE: {
    kind: "http-url",
    default: "https://api.netless.link",
    defaultNote: "`https://api.netless.link` (demo: the bundled simulator)",
    meaning: "Netless conversion API",
  },
  CONVERSION_API: {
    kind: "choice",
    default: "projector",
    values: CONVERSION_APIS,
    meaning:
      "the Netless conversion API new tasks are created on: `projector` (`/v5/projector/tasks`) or `legacy` (`/v5/services/conversion/tasks`); a task is always asked about on the API that created it",
  },
  CONVERSION_TIMEOUT_MS: {
    kind: "integer",
    default: 10_000,
    min: 100,
    max: 120_000,
    meaning: "deadline for one backend exchange → 504",
  },
  CONVERSION_POLL_FIRST_MS: {
    kind: "integer",
    default: 1_500,
    min: 100,
    max: 600_000,
    meaning: "boardline follows every task to its end: its first query of a new task comes this long after creating it",
  },
  CONVERSION_POLL_MAX_MS: {
    kind: "integer",
    default: 5_000,
    min: 100,
    max: 600_000,
    meaning: "queries of one task come at half its age apart, at most this far apart",
  },
  CONVERSION_MAX_POLLS: {
    kind: "integer",
    default: 256,
    min: 1,
    max: 100_000,
    meaning:
      "conversion polls one instance has under way at once at most: it claims due tasks as fast as the backend answers, up to this many at a time, so the tasks it can keep on time grow with the backend's speed (about this many ÷ the backend's answer time × `CONVERSION_POLL_MAX_MS`)",
  },
  CONVERSION_FOLLOW_MS: {
    kind: "integer",
    default: 600_000,
    min: 1_000,
    max: 86_400_000,
    meaning: "a task not ended this long after its submission to the backend is recorded as `Fail`, reason `timeout`",
  },
  CONVERSION_QUEUE_MAX: {
    kind: "integer",
    default: 1_000,
    min: 1,
    max: 1_000_000,
    meaning:
      "requests one project's conversion queue holds at most (they wait there for the project's turn at the backend, `conversion_qps` a second); past it ConvertFile answers 429 with the queue's expected wait as `Retry-After`",
  },
  CONVERSION_WEBHOOK_BASE: {
    kind: "text",
    allowed: "an absolute `https://` URL, no query or fragment (`http://` only for a loopback host)",
    check: checkWebhookBase,
    meaning:
      "boardline's public base URL: projector tasks are then created with the webhook `<base>/v1/whiteboard/conversion-webhook/<id>?sig=…`, whose call makes the follower query the task at once (the polls go on regardless); needs `CONVERSION_WEBHOOK_SECRET`",
  },
  CONVERSION_WEBHOOK_SECRET: {
    kind: "text",
    secret: true,
    defaultNote: "— (random in demo mode)",
    allowed: "at least 32 bytes; not the `JWT_SECRET`",
    untrimmed: true,
    check: (v) => (new TextEncoder().encode(v).length < 32 ? "must be at least 32 bytes" : undefined),
    meaning:
      "the HMAC-SHA256 key of the webhook URLs' `sig`: the same on every instance; required with `CONVERSION_WEBHOOK_BASE` outside demo mode. A new key makes the URLs of running tasks fail (401); those tasks are still followed by polling",
  },
  ...WATCH_VARIABLES,
  ...LINE_VARIABLES,
  CONVERSION_RETENTION_DAYS: {
    kind: "integer",
    default: 7,
    min: 1,
    max: 365,
    meaning: "how long a task's record (and its pages) is kept after its last change",
  },
  IDEMPOTENCY_TTL_HOURS: {
    kind: "integer",
    default: 24,
    min: 1,
    max: 720,
    meaning:
      "how long the answer of a ConvertFile sent with an `Idempotency-Key` is kept: a retry with the same key and request within it gets that answer again, without a second conversion",
  },
  CHANNEL_DEFAULT_TTL_HOURS: {
    kind: "integer",
    default: 0,
    defaultNote: "— (channels live until deleted)",
    min: 1,
    max: 8760,
    meaning:
      "the lifetime of a channel CreateChannel makes without `expire_time` (and of `boardline channel create`'s): it stops working this many hours after its creation and its keys are removed. Unset: such channels live until deleted — the meeting backend is expected to delete a meeting's channel at its end, or to send `expire_time`",
  },
  CORS_ORIGINS: {
    kind: "list",
    defaultNote: "— (none)",
    allowed: "comma-separated origins (`https://app.example.com`) or `*`",
    check: (o) =>
      o === "*" || isOrigin(o) ? undefined : `must list origins like https://app.example.com, or * (got "${o}")`,
    meaning: "the browser origins allowed to call (CORS)",
  },
  MAX_BODY_BYTES: {
    kind: "integer",
    default: 64 * 1024,
    min: 256,
    max: 16 * 1024 * 1024,
    meaning: "request body limit (413)",
  },
  TLS_CERT: {
    kind: "file",
    allowed: "a PEM file",
    meaning: "certificate (chain); with `TLS_KEY`, TLS with ALPN `h2` and `http/1.1` on the same port",
  },
  TLS_KEY: {
    kind: "file",
    allowed: "a PEM file",
    meaning: "the certificate's private key; set together with `TLS_CERT`",
  },
  LOG_LEVEL: {
    kind: "choice",
    default: "info",
    values: LOG_LEVELS,
    meaning: "JSON lines on stdout (pino)",
  },
  OTEL_EXPORTER_OTLP_ENDPOINT: {
    kind: "http-url",
    defaultNote: "— (no traces)",
    meaning:
      "turns tracing on (OpenTelemetry): a span per call, with the Redis commands and Netless exchanges as its children, exported over OTLP to this collector (HTTP: `/v1/traces` is appended). The OpenTelemetry SDK reads the other standard `OTEL_*` variables itself: `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf` by default, `http/json`, `grpc`), `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_TRACES_SAMPLER`(`_ARG`), `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_BSP_*`…",
  },
  OTEL_SERVICE_NAME: {
    kind: "text",
    default: "boardline",
    allowed: "any text",
    meaning: "the `service.name` of the spans (with tracing on)",
  },
  SHUTDOWN_DELAY_MS: {
    kind: "integer",
    default: 5_000,
    defaultNote: "`5000` (`0` in demo mode)",
    min: 0,
    max: 300_000,
    meaning:
      "after SIGTERM, how long the instance keeps serving everything while `/readyz` answers 503 (and gRPC health NOT_SERVING), so load balancers stop sending it new connections before it stops accepting them; then SHUTDOWN_GRACE_MS. SIGINT (Ctrl-C) skips it",
  },
  SHUTDOWN_GRACE_MS: {
    kind: "integer",
    default: 10_000,
    min: 0,
    max: 300_000,
    meaning: "how long in-flight requests may finish after SIGTERM",
  },
  ...GUESS_VARIABLES,
  PASSPHRASE_CACHE_MS: {
    kind: "integer",
    default: 1000,
    min: 0,
    max: 60_000,
    meaning:
      "how long a passphrase or whiteboard record (or its absence) may be served from memory: a record another writer creates, changes or deletes takes effect within this bound; `0` = read Redis every time",
  },
  ...KEY_VARIABLES,
} as const satisfies Record<string, Variable>;

export type VariableName = keyof typeof VARIABLES;
