/**
 * The Redis store's plumbing: every Redis call bounded by its own deadline and
 * its errors turned into `Failure("unavailable")` (with the original error as
 * `cause`, for the logs only: Redis error text never goes to a client); the
 * writes of one event-loop turn coalesced (write-coalescing.ts); the writes a
 * caller is told about followed by WAIT when replicas are required
 * (replica-ack.ts); connection changes logged once each; and closing.
 */
import type { Logger } from "../../log.js";
import { Failure, isFailure } from "../../services/failure.js";
import { type RedisErrorKind, type StoreObserver, UNOBSERVED } from "../../services/store-observer.js";
import type { Fields } from "../schema/channel-records.js";
import type { RedisClient } from "./connection.js";
import { AcknowledgedWrites, NO_REPLICA_ACK, type ReplicaAck } from "./replica-ack.js";
import { WriteCoalescer } from "./write-coalescing.js";
import { commandFamily } from "./command-families.js";
import { DeadlinePassed, withDeadline } from "./deadline.js";

export class RedisCalls {
  private readonly coalescer: WriteCoalescer;
  /** undefined until the first ready/error; then whether the last event was good. */
  private healthy: boolean | undefined;
  private closing: Promise<void> | undefined;
  /** With REDIS_MIN_REPLICAS: the writes followed by WAIT, on their own connection. */
  private readonly acked: AcknowledgedWrites | undefined;
  /** Where each command's time and failure, the reconnections and the WAITs are reported (the metrics). */
  private observer: StoreObserver = UNOBSERVED;
  /** Whether the client was ready once: a later `ready` is a reconnection. */
  private wasReady = false;

  /**
   * `ackClient`: the connection of the acknowledged writes (a second one to
   * the same deployment, so that a WAIT, which holds up its connection until
   * the replicas answer, never holds up reads); default `client` itself.
   */
  constructor(
    readonly client: RedisClient,
    private readonly logger: Logger,
    private readonly timeoutMs: number,
    ack: ReplicaAck = NO_REPLICA_ACK,
    private readonly ackClient: RedisClient = client,
  ) {
    this.coalescer = new WriteCoalescer(client);
    const own = ackClient === client ? this.coalescer : new WriteCoalescer(ackClient);
    this.acked =
      ack.minReplicas === 0
        ? undefined
        : new AcknowledgedWrites(ackClient, ack, logger, own, (ok) => this.observer.onReplicaWait(ok));
    // Its outages are the client's (the same Redis), logged once there; its calls fail as 503 all the same.
    if (ackClient !== client) ackClient.on("error", () => {});
    this.watchConnection();
  }

  /** From now on, report to `observer`. */
  observe(observer: StoreObserver): void {
    this.observer = observer;
  }

  /** The connections: the client's, and the acknowledged writes' own when it has one. */
  get clients(): RedisClient[] {
    return this.ackClient === this.client ? [this.client] : [this.client, this.ackClient];
  }

  /**
   * Runs one Redis call under the deadline and turns any error into
   * `Failure("unavailable")`. The deadline does not cancel the command: an
   * answer of 503 means "outcome unknown", as with any timed-out write.
   */
  async call<T>(operation: string, run: (client: RedisClient) => Promise<T>, timeoutMs = this.timeoutMs): Promise<T> {
    if (this.closing) throw new Failure("unavailable", { cause: new Error("Redis store is closed") });
    this.coalescer.hold();
    const started = performance.now();
    try {
      const answer = await withDeadline(
        run(this.client),
        timeoutMs,
        `${operation}: no answer from Redis within ${timeoutMs} ms`,
      );
      this.observer.onCommand(commandFamily(operation), (performance.now() - started) / 1000);
      return answer;
    } catch (e) {
      if (isFailure(e)) throw e;
      this.observer.onCommand(commandFamily(operation), (performance.now() - started) / 1000, errorKind(e));
      if (isReplyError(e)) {
        // Redis answered with an error: not an outage, something to look at.
        this.logger.error({ err: e, operation }, "Redis rejected a command");
      }
      throw new Failure("unavailable", { cause: e });
    }
  }

  /**
   * A write a caller is told about (or a later step builds on): `call`, and
   * with REDIS_MIN_REPLICAS a WAIT after it on the connection that carried it
   * (replica-ack.ts), within the command timeout plus the WAIT's. `run` gets
   * that connection: on a Cluster the one to the master of `key`'s slot.
   */
  write<T>(operation: string, key: string, run: (client: RedisClient) => Promise<T>): Promise<T> {
    const acked = this.acked;
    if (acked === undefined) return this.call(operation, run);
    return this.call(operation, () => acked.write(key, run), this.timeoutMs + acked.timeoutMs);
  }

  /** A hash's fields; a key of another type reads as a malformed record (empty). */
  readHash(operation: string, key: string): Promise<Fields> {
    return this.call(operation, (c) =>
      c.hgetall(key).catch((e: unknown) => {
        if (!isWrongType(e)) throw e;
        this.logger.warn({ operation }, "Redis record has the wrong type; treated as absent");
        return {};
      }),
    );
  }

  /** QUIT (pending replies arrive first), then drop the connections. Idempotent. */
  close(): Promise<void> {
    const quit = async (client: RedisClient) => {
      try {
        await withDeadline(client.quit(), this.timeoutMs, "QUIT timed out");
      } catch {
        // Not connected or not answering: nothing left to say goodbye to.
      } finally {
        client.disconnect();
      }
    };
    this.closing ??= Promise.all(this.clients.map(quit)).then(() => undefined);
    return this.closing;
  }

  /** Logs connection changes once each, not once per failed request or retry. */
  private watchConnection(): void {
    const down = (err: unknown, message: string) => {
      if (this.closing || this.healthy === false) return;
      this.healthy = false;
      this.logger.warn({ err }, message);
    };
    this.client.on("ready", () => {
      if (this.wasReady) this.observer.onReconnect();
      this.wasReady = true;
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
export async function execAll(batch: { exec(): Promise<[Error | null, unknown][] | null> }): Promise<void> {
  const results = await batch.exec();
  if (results === null) throw new Error("transaction aborted");
  for (const [error] of results) if (error) throw error;
}

/** A rejection handler: a WRONGTYPE reply reads as `fallback`, anything else is rethrown. */
export function orIfWrongType<T>(fallback: T): (e: unknown) => T {
  return (e) => {
    if (isWrongType(e)) return fallback;
    throw e;
  };
}

function isReplyError(e: unknown): e is Error {
  return e instanceof Error && e.name === "ReplyError";
}

/** What kind of failure a command's error is: ioredis's own errors (not Redis's answers) are the connection's. */
function errorKind(e: unknown): RedisErrorKind {
  if (e instanceof DeadlinePassed) return "timeout";
  if (isReplyError(e)) {
    if (e.message.startsWith("WRONGTYPE")) return "wrong_type";
    return /NOSCRIPT|script/i.test(e.message) ? "script" : "other";
  }
  if (
    e instanceof Error &&
    (CONNECTION_ERRORS.has(e.name) || "code" in e || /connection|stream|writeable/i.test(e.message))
  )
    return "connection";
  return "other";
}

const CONNECTION_ERRORS = new Set(["MaxRetriesPerRequestError", "AbortError", "ClusterAllFailedError"]);

function isWrongType(e: unknown): boolean {
  return isReplyError(e) && e.message.startsWith("WRONGTYPE");
}
