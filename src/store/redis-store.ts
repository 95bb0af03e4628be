/**
 * The production store: the documented Redis records (docs/architecture.md,
 * "Redis schema") over ioredis, on one node, a Cluster or through Sentinel.
 * This file is its request path; the admin functions go through the shared
 * admin front (admin-front.ts) to its raw admin operations (redis-admin.ts),
 * the conversion follower's through the shared conversion front
 * (conversion-follow.ts) to its raw conversion operations
 * (redis-conversions.ts), and every call goes through its plumbing
 * (redis-calls.ts).
 *
 * Every Redis or connection error reaches callers as `Failure("unavailable")`
 * with the original error as `cause` (logs only; Redis error text never goes
 * to a client). Each request-path call is also bounded by its own deadline, so
 * no call outlives `commandTimeoutMs` whatever the client library does.
 * Passphrases never reach Redis or the logs: only their sha256 is used, and
 * keys of passphrase records are not logged either.
 */
import type { Logger } from "../log.js";
import { Failure } from "../services/failure.js";
import type { AdminStore, MuteChange, PassphraseRecord, WhiteboardSettings } from "../services/ports.js";
import { AdminFront } from "./admin-front.js";
import { ConversionFollow } from "./conversion-follow.js";
import { CONVERSION_TTL_SECONDS, type KeySchema, keySchema, MUTE_EVENTS_MAXLEN } from "./keys.js";
import { muteFlag, parsePassphrase, parseWhiteboard } from "./records.js";
import { RedisAdmin } from "./redis-admin.js";
import { RedisCalls, withDeadline } from "./redis-calls.js";
import { RedisConversions } from "./redis-conversions.js";
import {
  type ConnectionTuning,
  createRedisClient,
  DEFAULT_TUNING,
  type RedisClient,
  type RedisConnectionOptions,
} from "./redis-connection.js";
import { defineScripts, type ScriptCommands } from "./redis-scripts.js";

export type { RedisConnectionOptions, RedisNodeAddress } from "./redis-connection.js";

export interface RedisStoreSettings {
  /** Key prefix (REDIS_KEY_PREFIX); default `bl:`. */
  keyPrefix?: string;
  logger: Logger;
  /** Longest a single Redis call may take before it fails as unavailable; default 1000. */
  commandTimeoutMs?: number;
  /** Longest a connection attempt may take; default 1000. */
  connectTimeoutMs?: number;
  /** Cap of the reconnect back-off; default 500. */
  maxReconnectDelayMs?: number;
  /** How long a conversion task's record and changes stream outlive its last change; default 7 days. */
  retentionSeconds?: number;
}

/**
 * Connects (in the background) and returns the store at once; requests fail
 * with `unavailable` until the connection is ready. Await
 * `store.waitUntilReady()` where start-up should wait for Redis.
 */
export function createRedisStore(options: RedisConnectionOptions, settings: RedisStoreSettings): RedisStore {
  const tuning: ConnectionTuning = {
    commandTimeoutMs: settings.commandTimeoutMs ?? DEFAULT_TUNING.commandTimeoutMs,
    connectTimeoutMs: settings.connectTimeoutMs ?? DEFAULT_TUNING.connectTimeoutMs,
    maxReconnectDelayMs: settings.maxReconnectDelayMs ?? DEFAULT_TUNING.maxReconnectDelayMs,
  };
  return new RedisStore(createRedisClient(options, tuning), {
    keyPrefix: settings.keyPrefix,
    logger: settings.logger,
    commandTimeoutMs: tuning.commandTimeoutMs,
    retentionSeconds: settings.retentionSeconds,
  });
}

export class RedisStore extends AdminFront implements AdminStore {
  readonly keys: KeySchema;
  protected readonly rawAdmin: RedisAdmin;
  private readonly calls: RedisCalls;
  private readonly scripts: ScriptCommands;
  readonly conversions: ConversionFollow;

  constructor(
    private readonly client: RedisClient,
    settings: {
      keyPrefix?: string | undefined;
      logger: Logger;
      commandTimeoutMs?: number | undefined;
      retentionSeconds?: number | undefined;
    },
  ) {
    super();
    this.keys = keySchema(settings.keyPrefix);
    this.calls = new RedisCalls(client, settings.logger, settings.commandTimeoutMs ?? DEFAULT_TUNING.commandTimeoutMs);
    this.scripts = defineScripts(client);
    this.rawAdmin = new RedisAdmin(this.calls, this.keys, this.scripts);
    const retentionSeconds = settings.retentionSeconds ?? CONVERSION_TTL_SECONDS;
    this.conversions = new ConversionFollow(new RedisConversions(this.calls, this.keys, retentionSeconds));
  }

  /**
   * Resolves once connected. After `timeoutMs` throws `Failure("unavailable")`
   * whose `cause` is the last connection error the client reported while
   * waiting (e.g. ECONNREFUSED), or the time-out itself when it reported none.
   */
  async waitUntilReady(timeoutMs = 5000): Promise<void> {
    if (this.client.status === "ready") return;
    let lastError: unknown;
    const onError = (err: unknown) => {
      lastError = err;
    };
    this.client.on("error", onError);
    let onReady: (() => void) | undefined;
    try {
      await withDeadline(
        new Promise<void>((resolve) => {
          onReady = resolve;
          this.client.once("ready", resolve);
        }),
        timeoutMs,
        `Redis not ready after ${timeoutMs} ms`,
      );
    } catch (e) {
      throw new Failure("unavailable", { cause: lastError ?? e });
    } finally {
      this.client.off("error", onError);
      if (onReady) this.client.off("ready", onReady);
    }
  }

  async lookupPassphrase(passphrase: string): Promise<PassphraseRecord | undefined> {
    const fields = await this.calls.readHash("lookupPassphrase", this.keys.passphrase(passphrase));
    return parsePassphrase(fields);
  }

  async getWhiteboard(project: string): Promise<WhiteboardSettings | undefined> {
    return parseWhiteboard(await this.calls.readHash("getWhiteboard", this.keys.whiteboard(project)));
  }

  async setMute(change: MuteChange): Promise<void> {
    const { project, channel } = change;
    await this.calls.call("setMute", () =>
      this.scripts.blSetMute(
        this.keys.pstnMute(project, channel),
        this.keys.pstnEvents(project, channel),
        change.uid,
        muteFlag(change.mute),
        change.by,
        String(change.at),
        String(MUTE_EVENTS_MAXLEN),
      ),
    );
  }

  async recordPassphraseMiss(callerKey: string, windowSeconds: number): Promise<void> {
    const key = this.keys.guesses(callerKey);
    await this.calls.call("recordPassphraseMiss", () => this.scripts.blCountMiss(key, String(windowSeconds)));
  }

  async passphraseMisses(callerKey: string): Promise<{ count: number; resetSeconds: number }> {
    const key = this.keys.guesses(callerKey);
    // One round trip; both commands address the same key, so Cluster is fine.
    const [count, ttl] = await this.calls.call("passphraseMisses", async (c) => {
      const replies = await c.multi().get(key).ttl(key).exec();
      if (replies === null) throw new Error("MULTI aborted");
      for (const [err] of replies) if (err) throw err;
      return [Number(replies[0]?.[1] ?? 0), Number(replies[1]?.[1] ?? -2)];
    });
    return { count: Number.isFinite(count) ? count : 0, resetSeconds: ttl > 0 ? ttl : 0 };
  }

  async ping(): Promise<void> {
    await this.calls.call("ping", (c) => c.ping());
  }

  /** QUIT (pending replies arrive first), then drop the connection. Idempotent. */
  close(): Promise<void> {
    return this.calls.close();
  }
}
