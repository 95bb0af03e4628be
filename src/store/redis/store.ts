/**
 * The production store: the documented Redis records (docs/redis-schema.md)
 * over ioredis, on one node, a Cluster or through Sentinel.
 * This file is its request path; the admin functions go through the shared
 * admin front (src/store/checked-admin.ts) to its raw admin operations (src/store/redis/admin.ts),
 * the conversion follower's through the shared conversion front
 * (src/store/conversion-steps.ts) to its raw conversion operations
 * (src/store/redis/conversions.ts), and every call goes through its plumbing
 * (src/store/redis/calls.ts).
 *
 * Every Redis or connection error reaches callers as `Failure("unavailable")`
 * with the original error as `cause` (logs only; Redis error text never goes
 * to a client). Each request-path call is also bounded by its own deadline, so
 * no call outlives `commandTimeoutMs` whatever the client library does.
 * Passphrases never reach Redis or the logs: only their sha256 is used, and
 * keys of passphrase records are not logged either.
 */
import type { Logger } from "../../log.js";
import { developmentKeyRing, type KeyRing } from "../../secrets/key-ring.js";
import { Failure } from "../../services/failure.js";
import {
  type AdminStore,
  DEFAULT_LINE_LIMITS,
  type GuessTaken,
  type LineLimits,
  type MuteChange,
  type PassphraseRecord,
  type WhiteboardSettings,
} from "../../services/ports.js";
import type { PstnSnapshot } from "../../services/pstn/snapshot.js";
import type { StoreObserver } from "../../services/store-observer.js";
import { CheckedAdmin } from "../checked-admin.js";
import { lookUpPassphrase } from "../channels/lookup-passphrase.js";
import { ChannelSteps } from "../channels/steps.js";
import { ConversionSteps } from "../conversion-steps.js";
import { guessTaken } from "../guesses.js";
import {
  CONVERSION_TTL_SECONDS,
  IDEMPOTENCY_TTL_SECONDS,
  type KeySchema,
  keySchema,
  MUTE_EVENTS_MAXLEN,
} from "../schema/keys.js";
import { muteFlag, muteMetaHead, openWhiteboard, pairsToMap } from "../schema/channel-records.js";
import { parseLineSnapshot } from "../schema/line-records.js";
import { RedisAdmin } from "./admin.js";
import { RedisChannels } from "./channels.js";
import { pingMasters, perConnection } from "./cluster-connections.js";
import { RedisCalls } from "./calls.js";
import { withDeadline } from "./deadline.js";
import { RedisConversions } from "./conversions.js";
import { RedisConversionQueue } from "./conversion-queue.js";
import { ConversionQueueSteps } from "../conversion-queue-steps.js";
import { RedisIdempotency } from "./idempotency.js";
import {
  type ConnectionTuning,
  createRedisClient,
  DEFAULT_TUNING,
  type RedisClient,
  type RedisConnectionOptions,
} from "./connection.js";
import { RedisNotifications } from "./notifications.js";
import { RedisPstnEvents } from "./pstn-events.js";
import { RedisPhoneLine } from "./line.js";
import { defineScripts, type ScriptCommands } from "./scripts.js";
import type { ReplicaAck } from "./replica-ack.js";

export type { RedisConnectionOptions, RedisNodeAddress } from "./connection.js";

export interface RedisStoreSettings {
  /** Key prefix (REDIS_KEY_PREFIX); default `bl:`. */
  keyPrefix?: string;
  /** The keys of the passphrase index (PASSPHRASE_KEYS); default the development key. */
  passphraseKeys?: KeyRing;
  logger: Logger;
  /** Longest a single Redis call may take before it fails as unavailable; default 1000. */
  commandTimeoutMs?: number;
  /** Longest a connection attempt may take; default 1000. */
  connectTimeoutMs?: number;
  /** Cap of the reconnect back-off; default 500. */
  maxReconnectDelayMs?: number;
  /** How long a conversion task's record and changes stream outlive its last change; default 7 days. */
  retentionSeconds?: number;
  /** Replicas an acknowledged write must reach (REDIS_MIN_REPLICAS, REDIS_REPLICA_TIMEOUT_MS); default none. */
  replicaAck?: ReplicaAck;
  /** How long the answer of a call sent with an Idempotency-Key is kept; default 24 hours. */
  idempotencyTtlSeconds?: number;
  /** SECRETS_KEYS, which seal the whiteboard record's secrets; default the development key. */
  secretsKeys?: KeyRing;
  /** PSTN_PRESENCE_TTL_SECONDS and PSTN_MAX_LINE; default DEFAULT_LINE_LIMITS. */
  line?: LineLimits;
}

/** The store's scripts on a connection: the client's, or (writes with WAIT on a Cluster) a node's own. */
const scriptsOn = perConnection(defineScripts);

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
  const replicated = (settings.replicaAck?.minReplicas ?? 0) > 0;
  return new RedisStore(createRedisClient(options, tuning), {
    keyPrefix: settings.keyPrefix,
    passphraseKeys: settings.passphraseKeys,
    logger: settings.logger,
    commandTimeoutMs: tuning.commandTimeoutMs,
    retentionSeconds: settings.retentionSeconds,
    replicaAck: settings.replicaAck,
    ackClient: replicated ? createRedisClient(options, tuning, "boardline-acked-writes") : undefined,
    idempotencyTtlSeconds: settings.idempotencyTtlSeconds,
    secretsKeys: settings.secretsKeys,
    line: settings.line,
  });
}

/** Resolves once `client` is ready; else `Failure("unavailable")` with its last connection error (see waitUntilReady). */
async function readyWithin(client: RedisClient, timeoutMs: number): Promise<void> {
  if (client.status === "ready") return;
  let lastError: unknown;
  const onError = (err: unknown) => {
    lastError = err;
  };
  client.on("error", onError);
  let onReady: (() => void) | undefined;
  try {
    await withDeadline(
      new Promise<void>((resolve) => {
        onReady = resolve;
        client.once("ready", resolve);
      }),
      timeoutMs,
      `Redis not ready after ${timeoutMs} ms`,
    );
  } catch (e) {
    throw new Failure("unavailable", { cause: lastError ?? e });
  } finally {
    client.off("error", onError);
    if (onReady) client.off("ready", onReady);
  }
}

export class RedisStore extends CheckedAdmin implements AdminStore {
  readonly keys: KeySchema;
  protected readonly primitives: RedisAdmin;
  private readonly calls: RedisCalls;
  private readonly scripts: ScriptCommands;
  readonly conversions: ConversionSteps;
  readonly conversionQueue: ConversionQueueSteps;
  readonly pstnEvents: RedisPstnEvents;
  readonly line: RedisPhoneLine;
  readonly idempotency: RedisIdempotency;
  readonly channels: ChannelSteps;
  protected readonly secretsKeys: KeyRing;

  constructor(
    client: RedisClient,
    settings: {
      keyPrefix?: string | undefined;
      passphraseKeys?: KeyRing | undefined;
      logger: Logger;
      commandTimeoutMs?: number | undefined;
      retentionSeconds?: number | undefined;
      replicaAck?: ReplicaAck | undefined;
      /** The acknowledged writes' own connection (see RedisCalls); default `client`. */
      ackClient?: RedisClient | undefined;
      idempotencyTtlSeconds?: number | undefined;
      /** Default the development key. */
      secretsKeys?: KeyRing | undefined;
      /** The phone line's lease and size; default DEFAULT_LINE_LIMITS. */
      line?: LineLimits | undefined;
    },
  ) {
    super();
    this.keys = keySchema(settings.keyPrefix, settings.passphraseKeys);
    this.secretsKeys = settings.secretsKeys ?? developmentKeyRing("SECRETS_KEYS");
    const timeoutMs = settings.commandTimeoutMs ?? DEFAULT_TUNING.commandTimeoutMs;
    this.calls = new RedisCalls(client, settings.logger, timeoutMs, settings.replicaAck, settings.ackClient ?? client);
    this.scripts = scriptsOn(client);
    this.primitives = new RedisAdmin(this.calls, this.keys, this.secretsKeys);
    const retentionSeconds = settings.retentionSeconds ?? CONVERSION_TTL_SECONDS;
    const records = new RedisConversions(this.calls, this.keys, retentionSeconds);
    this.conversions = new ConversionSteps(records);
    this.conversionQueue = new ConversionQueueSteps(
      new RedisConversionQueue(this.calls, this.keys, retentionSeconds),
      records,
      this.conversions,
      this.secretsKeys,
    );
    const notifications = new RedisNotifications(client, this.keys, timeoutMs);
    this.pstnEvents = new RedisPstnEvents(client, this.calls, this.keys, notifications);
    this.line = new RedisPhoneLine(this.calls, this.keys, settings.line ?? DEFAULT_LINE_LIMITS);
    const idempotencyTtlSeconds = settings.idempotencyTtlSeconds ?? IDEMPOTENCY_TTL_SECONDS;
    this.idempotency = new RedisIdempotency(this.calls, this.keys, idempotencyTtlSeconds);
    this.channels = new ChannelSteps(new RedisChannels(this.calls, this.keys, scriptsOn), this.primitives, this.keys);
  }

  /**
   * Resolves once connected (the acknowledged writes' own connection too).
   * After `timeoutMs` throws `Failure("unavailable")` whose `cause` is the last
   * connection error the client reported while waiting (e.g. ECONNREFUSED), or
   * the time-out itself when it reported none.
   */
  async waitUntilReady(timeoutMs = 5000): Promise<void> {
    await Promise.all(this.calls.clients.map((client) => readyWithin(client, timeoutMs)));
  }

  lookupPassphrase(project: string, passphrase: string): Promise<PassphraseRecord | undefined> {
    return lookUpPassphrase(
      this.channels,
      (digest) => this.calls.readHash("lookupPassphrase", this.keys.passphraseByHash(digest)),
      project,
      passphrase,
    );
  }

  async getWhiteboard(project: string): Promise<WhiteboardSettings | undefined> {
    const fields = await this.calls.readHash("getWhiteboard", this.keys.whiteboard(project));
    return openWhiteboard(this.secretsKeys, project, fields);
  }

  async setMute(change: MuteChange): Promise<void> {
    const keys = this.keys.channelKeys(change.project, change.channel);
    await this.calls.write("setMute", keys.mute, (c) =>
      scriptsOn(c).blSetMute(
        keys.mute,
        keys.events,
        keys.meta,
        keys.notify,
        keys.record,
        change.uid,
        muteFlag(change.mute),
        change.by,
        String(change.at),
        String(MUTE_EVENTS_MAXLEN),
        muteMetaHead(change),
        change.expireAt === undefined ? "" : String(change.expireAt),
      ),
    );
  }

  async getPstnSnapshot(project: string, channel: string): Promise<PstnSnapshot> {
    const k = this.keys.channelKeys(project, channel);
    const [mute, meta, asOf, line, policy] = await this.calls.call("getPstnSnapshot", () =>
      this.scripts.blPstnSnapshot(k.mute, k.meta, k.events, k.line, k.policy),
    );
    const hashes = {
      mute: pairsToMap(mute),
      meta: pairsToMap(meta),
      line: pairsToMap(line),
      policy: Object.fromEntries(pairsToMap(policy)),
    };
    return parseLineSnapshot(hashes, asOf);
  }

  async takeGuess(callerKey: string, slot: string, limit: number, windowSeconds: number): Promise<GuessTaken> {
    const key = this.keys.guesses(callerKey);
    const waitMs = await this.calls.call("takeGuess", () =>
      this.scripts.blTakeGuess(key, slot, String(limit), String(windowSeconds * 1000)),
    );
    return guessTaken(waitMs);
  }

  async returnGuess(callerKey: string, slot: string): Promise<void> {
    const key = this.keys.guesses(callerKey);
    await this.calls.call("returnGuess", (c) => c.zrem(key, slot));
  }

  async keepGuess(callerKey: string, slot: string): Promise<void> {
    const key = this.keys.guesses(callerKey);
    await this.calls.call("keepGuess", () => this.scripts.blKeepGuess(key, slot));
  }

  /** Reports the commands, their failures, reconnections, WAITs and re-subscriptions to `observer`. */
  observe(observer: StoreObserver): void {
    this.calls.observe(observer);
    this.pstnEvents.notifications.observer = observer;
  }

  /** Every master answers (on a Cluster: the master of every slot), so /readyz turns 503 while one is gone. */
  async ping(): Promise<void> {
    await this.calls.call("ping", pingMasters);
  }

  /** Drops the subscriber, QUITs (pending replies arrive first), then drops the connection. Idempotent. */
  close(): Promise<void> {
    this.pstnEvents.notifications.close();
    return this.calls.close();
  }
}
