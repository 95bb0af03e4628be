/**
 * All configuration, parsed and validated in one place, from the environment
 * (see variables.ts for every variable). An invalid value stops start-up with
 * one line naming the variable.
 */
export { ConfigError } from "./read-variable.js";
export type { JwtKeyConfig, JwtSettings, TokenSettings } from "./jwt-settings.js";
export { loadTokenSettings } from "./jwt-settings.js";
export { type Config, loadChannelDefaultTtlMs, loadConfig, loadKeyRings, loadSecretsKeys } from "./load-config.js";
export { loadRedisSettings, type RedisConfig, type RedisSettings } from "./redis-settings.js";
export type { WebhookConfig } from "./webhook-settings.js";
