import { describe, expect, it } from "vitest";
import { VARIABLES, type Variable } from "../../src/config/variables.js";
import { configError, SECRET, tempFile } from "./helpers.js";

/** Every integer below its minimum, above its maximum, and not a whole number. */
const integerCases = Object.entries(VARIABLES as Record<string, Variable>).flatMap(([name, row]) =>
  row.kind !== "integer"
    ? []
    : [
        ...(row.min > 0 ? [[name, String(row.min - 1)]] : []),
        [name, String(row.max + 1)],
        [name, "-1"],
        [name, "1.5"],
        [name, "ten"],
      ],
);

const JWKS_NOT_JSON = tempFile("jwks.json", "{not json");
const JWKS_NO_KEYS = tempFile("jwks.json", '{"issuer": "x"}');
const PEM = tempFile("cert.pem", "not really a PEM, but readable");

/** [variable, the environment that sets it wrong, a piece of the message]. */
const cases: Array<[string, Record<string, string>, string | RegExp]> = [
  ...integerCases.map(([name, value]): [string, Record<string, string>, RegExp] => [
    name as string,
    { [name as string]: value as string },
    /must be a whole number from \d+ to \d+ \(got /,
  ]),
  ["LOG_LEVEL", { LOG_LEVEL: "loud" }, "must be one of fatal, error, warn, info, debug, trace, silent"],
  ["REDIS_URL", { REDIS_URL: "localhost:6379" }, "must start with redis:// or rediss://"],
  ["REDIS_URL", { REDIS_URL: "redis://:hunter2@[x" }, "is not a valid URL"],
  ["REDIS_KEY_PREFIX", { REDIS_KEY_PREFIX: "{bl}" }, "must not contain braces or white space"],
  ["REDIS_KEY_PREFIX", { REDIS_KEY_PREFIX: "b l:" }, "must not contain braces or white space"],
  ["REDIS_CLUSTER_NODES", { REDIS_CLUSTER_NODES: "a:0" }, '(got "a:0")'],
  ["REDIS_SENTINELS", { REDIS_SENTINELS: "a:b:c", REDIS_SENTINEL_NAME: "m" }, '(got "a:b:c")'],
  ["REDIS_SENTINEL_USERNAME", { REDIS_SENTINEL_USERNAME: "u", REDIS_URL: "redis://x" }, "needs REDIS_SENTINELS"],
  ["REDIS_SENTINEL_PASSWORD", { REDIS_SENTINEL_PASSWORD: "a\nb", REDIS_URL: "redis://x" }, "must be one line"],
  ["REDIS_TLS_CA", { REDIS_TLS_CA: "/nonexistent/ca.pem", REDIS_URL: "rediss://x" }, "cannot be read (ENOENT"],
  ["REDIS_TLS_KEY", { REDIS_TLS_CERT: "/nonexistent/c.pem", REDIS_URL: "rediss://x" }, "must be set together"],
  ["REDIS_TLS_CERT", { REDIS_TLS_KEY: "/nonexistent/k.pem", REDIS_URL: "rediss://x" }, "must be set together"],
  ["REDIS_TLS_SERVERNAME", { REDIS_TLS_SERVERNAME: "10.0.0.7", REDIS_URL: "rediss://x" }, "must be a DNS name"],
  ["REDIS_TLS_SERVERNAME", { REDIS_TLS_SERVERNAME: "redis_.example", REDIS_URL: "rediss://x" }, "must be a DNS name"],
  ["JWT_SECRET", { JWT_SECRET: "x".repeat(31) }, "must be at least 32 bytes"],
  ["JWT_JWKS_URL", { JWT_JWKS_URL: "idp.example/jwks" }, "must be an absolute http(s) URL"],
  ["JWT_JWKS_URL", { JWT_JWKS_URL: "ftp://idp.example/jwks" }, "must be an http or https URL"],
  ["JWT_JWKS_URL", { JWT_JWKS_URL: "http://idp.invalid/jwks" }, "must be an https URL (http only for a loopback host"],
  ["JWT_JWKS_FILE", { JWT_JWKS_FILE: "/nonexistent/jwks.json" }, "cannot be read as JSON"],
  ["JWT_JWKS_FILE", { JWT_JWKS_FILE: JWKS_NOT_JSON }, "cannot be read as JSON"],
  ["JWT_JWKS_FILE", { JWT_JWKS_FILE: JWKS_NO_KEYS }, "must hold a JSON Web Key Set"],
  ["JWT_ALGORITHMS", { JWT_SECRET: SECRET, JWT_ALGORITHMS: "HS256,none" }, 'unsupported algorithm "none"'],
  ["JWT_TYPES", { JWT_SECRET: SECRET, JWT_TYPES: "at+jwt,jwt;v=1" }, "is not a media type like at+jwt or JWT"],
  ["CONVERSION_API_BASE", { CONVERSION_API_BASE: "api.netless.link" }, "must be an absolute http(s) URL"],
  ["CONVERSION_API_BASE", { CONVERSION_API_BASE: "ws://api.netless.link" }, "must be an http or https URL"],
  ["OTEL_EXPORTER_OTLP_ENDPOINT", { OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" }, "must be an http or https URL"],
  ["OTEL_EXPORTER_OTLP_ENDPOINT", { OTEL_EXPORTER_OTLP_ENDPOINT: "otel collector" }, "must be an absolute http(s) URL"],
  ["CONVERSION_API", { CONVERSION_API: "v4" }, "must be one of projector, legacy"],
  ["METRICS_ON_PUBLIC_PORT", { METRICS_ON_PUBLIC_PORT: "yes" }, "must be one of false, true"],
  ["PASSPHRASE_KEYS", { JWT_SECRET: SECRET, PASSPHRASE_KEYS: "c2hvcnQ=" }, "must decode to at least 32 bytes"],
  ["SECRETS_KEYS", { JWT_SECRET: SECRET, SECRETS_KEYS: "not base64!" }, "must be base64"],
  ["CONVERSION_API", { CONVERSION_API: "Projector" }, "must be one of projector, legacy"],
  [
    "CONVERSION_WEBHOOK_BASE",
    { CONVERSION_WEBHOOK_BASE: "http://boardline.example.com", CONVERSION_WEBHOOK_SECRET: "w".repeat(32) },
    "must be an https URL",
  ],
  [
    "CONVERSION_WEBHOOK_SECRET",
    { CONVERSION_WEBHOOK_BASE: "https://boardline.example.com", CONVERSION_WEBHOOK_SECRET: "short" },
    "must be at least 32 bytes",
  ],
  ["CORS_ORIGINS", { CORS_ORIGINS: "https://app.example.com/path" }, "must list origins like"],
  ["CORS_ORIGINS", { CORS_ORIGINS: "app.example.com" }, '(got "app.example.com")'],
  ["TLS_CERT", { TLS_CERT: "/nonexistent/cert.pem", TLS_KEY: PEM }, "cannot be read (ENOENT)"],
  ["TLS_KEY", { TLS_CERT: PEM, TLS_KEY: "/nonexistent/key.pem" }, "cannot be read (ENOENT)"],
];

describe("each kind of bad value stops start-up with one line naming the variable", () => {
  it.each(cases)("%s: %j", (variable, env, problem) => {
    // A key source, so that the value under test is what fails (not a missing key).
    const withKey = Object.keys(env).some((k) => k.startsWith("JWT_")) ? env : { JWT_SECRET: SECRET, ...env };
    const e = configError(withKey);
    expect(e.variable).toBe(variable);
    expect(e.message.startsWith(`${variable} `)).toBe(true);
    expect(e.message).not.toContain("\n");
    if (typeof problem === "string") expect(e.message).toContain(problem);
    else expect(e.message).toMatch(problem);
  });

  it("every variable in the table has at least one bad-value or rule test", () => {
    const covered = new Set(cases.map(([variable]) => variable));
    // Free text, or checked only together with other variables (see cross-variable-rules.test.ts).
    for (const name of [
      "HOST",
      "NODE_ENV",
      "REDIS_SENTINEL_NAME",
      "JWT_ISSUER",
      "JWT_AUDIENCE",
      "JWT_PROJECT_CLAIM",
      "JWT_SCOPE_CLAIM",
      "OTEL_SERVICE_NAME",
    ]) {
      covered.add(name);
    }
    expect(Object.keys(VARIABLES).filter((name) => !covered.has(name))).toEqual([]);
  });

  it("a REDIS_URL that cannot be read is not echoed (it may hold a password)", () => {
    expect(configError({ JWT_SECRET: SECRET, REDIS_URL: "redis://:hunter2@[x" }).message).not.toContain("hunter2");
  });
});
