/**
 * The conversion webhook part of the configuration (docs/architecture.md,
 * "Following conversions"): CONVERSION_WEBHOOK_BASE turns webhooks on, and
 * CONVERSION_WEBHOOK_SECRET is the HMAC key of their URLs. The key must be the
 * same on every instance and survive restarts (an instance checks URLs another
 * one signed, for tasks that run for minutes), so it is configured, not made
 * up: required with a base outside demo mode, where a random one is made (one
 * process, an in-memory store that a restart empties anyway). It is its own
 * key, not derived from JWT_SECRET: that may not exist (a JWKS), and rotating
 * one must not silently break the other.
 */
import { ConfigError, type Env, readText } from "./read-variable.js";

export interface WebhookConfig {
  /** Without a trailing slash. */
  readonly base: string;
  /** Undefined only in demo mode, where a random key is made at start-up. */
  readonly secret: Uint8Array | undefined;
}

/** Undefined when CONVERSION_WEBHOOK_BASE is not set (webhooks off). */
export function loadWebhookSettings(
  env: Env,
  demo: boolean,
  conversionApi: "projector" | "legacy",
): WebhookConfig | undefined {
  const base = readText(env, "CONVERSION_WEBHOOK_BASE");
  const secret = readText(env, "CONVERSION_WEBHOOK_SECRET");
  if (base === undefined) {
    if (secret === undefined) return undefined;
    throw new ConfigError(
      "CONVERSION_WEBHOOK_SECRET",
      "is set but CONVERSION_WEBHOOK_BASE is not (the secret only signs webhook URLs)",
    );
  }
  if (conversionApi === "legacy") {
    throw new ConfigError("CONVERSION_WEBHOOK_BASE", "needs CONVERSION_API=projector (the legacy API has no webhooks)");
  }
  if (secret === undefined && !demo) {
    throw new ConfigError(
      "CONVERSION_WEBHOOK_SECRET",
      "is required with CONVERSION_WEBHOOK_BASE outside demo mode (every instance must sign and check webhook URLs with the same key)",
    );
  }
  if (secret !== undefined && secret === readText(env, "JWT_SECRET")) {
    throw new ConfigError("CONVERSION_WEBHOOK_SECRET", "must not be the same as JWT_SECRET");
  }
  return {
    base: base.replace(/\/+$/, ""),
    secret: secret === undefined ? undefined : new TextEncoder().encode(secret),
  };
}
