/**
 * The production store: the documented Redis records (DESIGN §4) over ioredis.
 *
 * Every Redis or connection error reaches callers as `Failure("unavailable")`
 * with the original error as `cause` (logs only; Redis error text never goes
 * to a client). Each request-path call is also bounded by its own deadline, so
 * no call outlives `commandTimeoutMs` whatever the client library does.
 * Passphrases never reach Redis or the logs: only their sha256 is used, and
 * keys of passphrase records are not logged either.
 */
import { Cluster } from "ioredis";
import type { Logger } from "../log.js";
import { Failure, isFailure } from "../services/failure.js";
import type {
  AdminStore,
  ConversionTaskRecord,
  MuteChange,
  MuteEvent,
  PassphraseRecord,
  WhiteboardSettings,
} from "../services/ports.js";
import {
  type CreateChannelInput,
  channelPassphrases,
  checkProject,
  checkSettings,
  eventCount,
  passphraseConflict,
} from "./admin-checks.js";
import { CONVERSION_TTL_SECONDS, hashPassphrase, type KeySchema, keySchema, MUTE_EVENTS_MAXLEN } from "./keys.js";
import {
  conversionFields,
  type Fields,
  muteFlag,
  pairsToFields,
  parseConversion,
  parseMuteEvent,
  parseMuteState,
  parsePassphrase,
  parseWhiteboard,
  whiteboardFields,
} from "./records.js";
import {
  type ConnectionTuning,
  createRedisClient,
  DEFAULT_TUNING,
  type RedisClient,
  type RedisConnectionOptions,
} from "./redis-connection.js";
import { defineScripts, type ScriptCommands } from "./redis-scripts.js";
import { WriteCoalescer } from "./write-coalescing.js";

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
  });
}

/** Passphrase records are found by SCAN; this many keys per round trip. */
const SCAN_COUNT = 1000;

export class RedisStore implements AdminStore {
  readonly keys: KeySchema;
  private readonly scripts: ScriptCommands;
  private readonly coalescer: WriteCoalescer;
  private readonly logger: Logger;
  private readonly timeoutMs: number;
  /** undefined until the first ready/error; then whether the last event was good. */
  private healthy: boolean | undefined;
  private closing: Promise<void> | undefined;

  constructor(
    private readonly client: RedisClient,
    settings: { keyPrefix?: string | undefined; logger: Logger; commandTimeoutMs?: number | undefined },
  ) {
    this.keys = keySchema(settings.keyPrefix);
    this.logger = settings.logger;
    this.timeoutMs = settings.commandTimeoutMs ?? DEFAULT_TUNING.commandTimeoutMs;
    this.scripts = defineScripts(client);
    this.coalescer = new WriteCoalescer(client);
    this.watchConnection();
  }

  /** Resolves once connected; throws `Failure("unavailable")` after `timeoutMs`. */
  async waitUntilReady(timeoutMs = 5000): Promise<void> {
    if (this.client.status === "ready") return;
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
      throw new Failure("unavailable", { cause: e });
    } finally {
      if (onReady) this.client.off("ready", onReady);
    }
  }

  async lookupPassphrase(passphrase: string): Promise<PassphraseRecord | undefined> {
    const fields = await this.readHash("lookupPassphrase", this.keys.passphrase(hashPassphrase(passphrase)));
    return parsePassphrase(fields);
  }

  async getWhiteboard(project: string): Promise<WhiteboardSettings | undefined> {
    return parseWhiteboard(await this.readHash("getWhiteboard", this.keys.whiteboard(project)));
  }

  async setMute(change: MuteChange): Promise<void> {
    const { project, channel } = change;
    await this.call("setMute", () =>
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

  async recordConversion(task: ConversionTaskRecord): Promise<void> {
    const key = this.keys.conversion(task.uuid);
    // One transaction, so a record never exists without its expiry.
    await this.call("recordConversion", (c) =>
      execAll(c.multi().hset(key, conversionFields(task)).expire(key, CONVERSION_TTL_SECONDS)),
    );
  }

  async recordPassphraseMiss(callerKey: string, windowSeconds: number): Promise<void> {
    const key = this.keys.guesses(hashPassphrase(callerKey));
    await this.call("recordPassphraseMiss", () => this.scripts.blCountMiss(key, String(windowSeconds)));
  }

  async passphraseMisses(callerKey: string): Promise<{ count: number; resetSeconds: number }> {
    const key = this.keys.guesses(hashPassphrase(callerKey));
    // One round trip; both commands address the same key, so Cluster is fine.
    const [count, ttl] = await this.call("passphraseMisses", async (c) => {
      const replies = await c.multi().get(key).ttl(key).exec();
      if (replies === null) throw new Error("MULTI aborted");
      for (const [err] of replies) if (err) throw err;
      return [Number(replies[0]?.[1] ?? 0), Number(replies[1]?.[1] ?? -2)];
    });
    return { count: Number.isFinite(count) ? count : 0, resetSeconds: ttl > 0 ? ttl : 0 };
  }

  async ping(): Promise<void> {
    await this.call("ping", (c) => c.ping());
  }

  /** QUIT (pending replies arrive first), then drop the connection. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      try {
        await withDeadline(this.client.quit(), this.timeoutMs, "QUIT timed out");
      } catch {
        // Not connected or not answering: nothing left to say goodbye to.
      } finally {
        this.client.disconnect();
      }
    })();
    return this.closing;
  }

  // --- admin (operator CLI, tests) ---

  /**
   * Creates the channel or changes its passphrases: afterwards exactly the given
   * passphrases open it (older ones of this channel are removed). A passphrase
   * that already opens another channel is refused (`invalid`, naming that channel).
   */
  async createChannel(input: CreateChannelInput): Promise<void> {
    const wanted = channelPassphrases(input).map((w) => ({
      ...w,
      key: this.keys.passphrase(hashPassphrase(w.passphrase)),
    }));
    // Look before writing, so a conflict normally leaves nothing behind…
    for (const { key, record } of wanted) {
      const [project, channel] = await this.call("createChannel", (c) => c.hmget(key, "project", "channel"));
      if (project != null && (project !== record.project || channel !== record.channel)) {
        throw passphraseConflict(record.role, { project, channel: channel ?? "" });
      }
    }
    // …and claim atomically, in case another writer got there in between.
    const created: string[] = [];
    for (const { key, record } of wanted) {
      const reply = await this.call("createChannel", () =>
        this.scripts.blClaimPassphrase(key, record.project, record.channel, record.role),
      );
      if (reply[0] === 0) {
        await Promise.all(created.map((k) => this.call("createChannel", (c) => c.unlink(k))));
        throw passphraseConflict(record.role, { project: reply[1], channel: reply[2] });
      }
      if (reply[0] === 1) created.push(key);
    }
    const keep = new Set(wanted.map((w) => w.key));
    const stale = (await this.channelPassphraseKeys(input.project, input.channel)).filter((k) => !keep.has(k));
    await Promise.all(stale.map((k) => this.call("createChannel", (c) => c.unlink(k))));
  }

  async deleteChannel(project: string, channel: string): Promise<number> {
    const passKeys = await this.channelPassphraseKeys(project, channel);
    // One key per command: in a Cluster the passphrase records live in many slots.
    const counts = await Promise.all([
      ...passKeys.map((k) => this.call("deleteChannel", (c) => c.unlink(k))),
      // Same hash tag, same slot: one command is fine here.
      this.call("deleteChannel", (c) =>
        c.unlink(this.keys.pstnMute(project, channel), this.keys.pstnEvents(project, channel)),
      ),
    ]);
    return counts.reduce((sum, n) => sum + n, 0);
  }

  async setWhiteboard(project: string, settings: WhiteboardSettings): Promise<void> {
    checkProject(project);
    checkSettings(settings);
    const key = this.keys.whiteboard(project);
    const { set, remove } = whiteboardFields(settings);
    await this.call("setWhiteboard", (c) =>
      execAll(
        c
          .multi()
          .hdel(key, ...remove)
          .hset(key, set),
      ),
    );
  }

  async clearWhiteboard(project: string): Promise<void> {
    await this.call("clearWhiteboard", (c) => c.unlink(this.keys.whiteboard(project)));
  }

  async getMuteState(project: string, channel: string): Promise<Record<string, boolean>> {
    return parseMuteState(await this.readHash("getMuteState", this.keys.pstnMute(project, channel)));
  }

  async getMuteEvents(project: string, channel: string, count?: number): Promise<MuteEvent[]> {
    const n = eventCount(count);
    const key = this.keys.pstnEvents(project, channel);
    const entries = await this.call("getMuteEvents", (c) =>
      c.xrevrange(key, "+", "-", "COUNT", n).catch(orIfWrongType<[string, string[]][]>([])),
    );
    return entries.flatMap(([id, pairs]) => parseMuteEvent(id, pairsToFields(pairs)) ?? []);
  }

  async getConversion(uuid: string): Promise<ConversionTaskRecord | undefined> {
    return parseConversion(uuid, await this.readHash("getConversion", this.keys.conversion(uuid)));
  }

  // --- internals ---

  /**
   * Runs one Redis call under the deadline and turns any error into
   * `Failure("unavailable")`. The deadline does not cancel the command: an
   * answer of 503 means "outcome unknown", as with any timed-out write.
   */
  private async call<T>(operation: string, run: (client: RedisClient) => Promise<T>): Promise<T> {
    if (this.closing) throw new Failure("unavailable", { cause: new Error("Redis store is closed") });
    this.coalescer.hold();
    try {
      return await withDeadline(
        run(this.client),
        this.timeoutMs,
        `${operation}: no answer from Redis within ${this.timeoutMs} ms`,
      );
    } catch (e) {
      if (isFailure(e)) throw e;
      if (isReplyError(e)) {
        // Redis answered with an error: not an outage, something to look at.
        this.logger.error({ err: e, operation }, "Redis rejected a command");
      }
      throw new Failure("unavailable", { cause: e });
    }
  }

  /** A hash's fields; a key of another type reads as a malformed record (empty). */
  private readHash(operation: string, key: string): Promise<Fields> {
    return this.call(operation, (c) =>
      c.hgetall(key).catch((e: unknown) => {
        if (!isWrongType(e)) throw e;
        this.logger.warn({ operation }, "Redis record has the wrong type; treated as absent");
        return {};
      }),
    );
  }

  /** Keys of the passphrase records of one channel (SCAN on every master). */
  private async channelPassphraseKeys(project: string, channel: string): Promise<string[]> {
    const masters = this.client instanceof Cluster ? this.client.nodes("master") : [this.client];
    const found: string[] = [];
    for (const node of masters) {
      let cursor = "0";
      do {
        const [next, keys] = await this.call("scan", () =>
          node.scan(cursor, "MATCH", this.keys.passphrasePattern(), "COUNT", SCAN_COUNT),
        );
        cursor = next;
        if (keys.length === 0) continue;
        // The keys came from this node, so one pipeline to it can read them all.
        const pipeline = node.pipeline();
        for (const key of keys) pipeline.hmget(key, "project", "channel");
        const owners = await this.call("scan", async () => (await pipeline.exec()) ?? []);
        owners.forEach(([error, value], i) => {
          const [p, c] = Array.isArray(value) ? value : [];
          const key = keys[i];
          if (!error && key !== undefined && p === project && c === channel) found.push(key);
        });
      } while (cursor !== "0");
    }
    return found;
  }

  /** Logs connection changes once each, not once per failed request or retry. */
  private watchConnection(): void {
    const down = (err: unknown, message: string) => {
      if (this.closing || this.healthy === false) return;
      this.healthy = false;
      this.logger.warn({ err }, message);
    };
    this.client.on("ready", () => {
      if (this.healthy !== true) this.logger.info(this.healthy === undefined ? "Redis ready" : "Redis connection back");
      this.healthy = true;
    });
    this.client.on("error", (err: unknown) =>
      down(err, "Redis connection failed; requests fail with 503 until it is back"),
    );
    this.client.on("close", () => down(undefined, "Redis connection lost; requests fail with 503 until it is back"));
  }
}

/** Runs a MULTI (or pipeline) and fails when any of its commands failed. */
async function execAll(batch: { exec(): Promise<[Error | null, unknown][] | null> }): Promise<void> {
  const results = await batch.exec();
  if (results === null) throw new Error("transaction aborted");
  for (const [error] of results) if (error) throw error;
}

function withDeadline<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

function isReplyError(e: unknown): e is Error {
  return e instanceof Error && e.name === "ReplyError";
}

function isWrongType(e: unknown): boolean {
  return isReplyError(e) && e.message.startsWith("WRONGTYPE");
}

function orIfWrongType<T>(fallback: T): (e: unknown) => T {
  return (e) => {
    if (isWrongType(e)) return fallback;
    throw e;
  };
}
