/**
 * What the store reports of its own plumbing (the Redis store's commands,
 * errors, reconnections, replica WAITs and re-subscriptions), for the metrics.
 * Transport-free: the composition root wires it to the server's metrics; a
 * store that was never given one reports nowhere.
 */

/** The store's commands grouped by what they serve: few enough to label a histogram with. */
export const COMMAND_FAMILIES = [
  "mute",
  "line",
  "conversion",
  "queue",
  "channel",
  "idempotency",
  "guess",
  "watch",
  "admin",
  "other",
] as const;
export type CommandFamily = (typeof COMMAND_FAMILIES)[number];

/** Why a command failed: its deadline passed, the connection failed, or Redis refused it. */
export const REDIS_ERROR_KINDS = ["timeout", "connection", "wrong_type", "script", "other"] as const;
export type RedisErrorKind = (typeof REDIS_ERROR_KINDS)[number];

export interface StoreObserver {
  /** A command answered (`error` undefined) or failed, after `seconds`. */
  onCommand(family: CommandFamily, seconds: number, error?: RedisErrorKind): void;
  /** A connection that had been ready is ready again. */
  onReconnect(): void;
  /** A REDIS_MIN_REPLICAS WAIT after a write: enough replicas had it in time, or not. */
  onReplicaWait(ok: boolean): void;
  /** The subscriber subscribed `channels` again after its connection was lost or their slot moved. */
  onResubscribed(channels: number): void;
}

/** The observer of a store nobody watches. */
export const UNOBSERVED: StoreObserver = {
  onCommand() {},
  onReconnect() {},
  onReplicaWait() {},
  onResubscribed() {},
};
