/**
 * Replicated acknowledgement (REDIS_MIN_REPLICAS; docs/operations.md,
 * "Replicated acknowledgement"): a write a caller is told about is followed by
 * `WAIT <minReplicas> <timeoutMs>`, so with replicas required a 200 means that
 * many replicas have the write as well as the primary; fewer in time is a
 * failure, which callers see as 503 (outcome unknown).
 *
 * Redis's WAIT counts the replicas that have everything *this connection*
 * wrote so far, so it must go on the connection that carried the write, after
 * the write's answer:
 *
 * - one node or Sentinel: the client's one connection. If it was replaced
 *   between the write and the WAIT (a reconnect, a failover), a WAIT on the
 *   new one would count nothing of ours: the outcome is unknown.
 * - Cluster: the write goes straight to the connection of the master that
 *   serves the key's slot (src/store/redis/cluster-connections.ts), not through the cluster's
 *   redirections: a write redirected elsewhere (MOVED, ASK) would leave the
 *   WAIT counting another node's writes. A redirection fails the write (503)
 *   and refreshes the slot table for the next one.
 *
 * Why not in one round trip with the write: WAIT inside MULTI never blocks
 * and counts only what the connection wrote before the transaction (whose
 * writes reach the replicas at EXEC), and ioredis resends a script
 * whose EVALSHA met NOSCRIPT after whatever was pipelined behind it, so a
 * pipelined WAIT could run before the write it is meant to cover. The WAITs
 * issued in one event-loop turn still leave in one socket write.
 */
import type { Redis } from "ioredis";
import type { Logger } from "../../log.js";
import { connectionFor, noteFailure } from "./cluster-connections.js";
import type { RedisClient } from "./connection.js";
import type { WriteCoalescer } from "./write-coalescing.js";

export interface ReplicaAck {
  /** Replicas that must have a write before it is acknowledged; 0: the primary's word is enough (no WAIT). */
  readonly minReplicas: number;
  /** The WAIT's timeout. */
  readonly timeoutMs: number;
}

export const NO_REPLICA_ACK: ReplicaAck = { minReplicas: 0, timeoutMs: 0 };

/** A write that is on the primary but not (known to be) on enough replicas: its outcome is unknown. */
export class NotReplicated extends Error {
  override readonly name = "NotReplicated";
}

/**
 * The acknowledged writes of a store, on `client` (a connection of their own:
 * a WAIT holds up its connection until the replicas answer, so reads go
 * elsewhere). Logs when writes stop reaching their replicas, and when they
 * reach them again, once each.
 */
export class AcknowledgedWrites {
  /** Whether the last write reached its replicas (undefined: none yet). */
  private replicated: boolean | undefined;

  constructor(
    private readonly client: RedisClient,
    private readonly ack: ReplicaAck,
    private readonly logger: Logger,
    private readonly coalescer: WriteCoalescer,
    /** Each WAIT's outcome: enough replicas in time, or not (the metrics). */
    private readonly onWait: (ok: boolean) => void = () => {},
  ) {}

  get timeoutMs(): number {
    return this.ack.timeoutMs;
  }

  /** `writeAcknowledged` on the writes' connection, its writes and WAITs coalesced per loop turn. */
  async write<T>(key: string, run: (connection: Redis) => Promise<T>): Promise<T> {
    const hold = () => this.coalescer.hold();
    hold();
    try {
      const result = await writeAcknowledged(this.client, key, this.ack, run, hold);
      this.onWait(true);
      this.note(true);
      return result;
    } catch (e) {
      if (e instanceof NotReplicated) {
        this.onWait(false);
        this.note(false, e);
      }
      throw e;
    }
  }

  private note(reached: boolean, why?: NotReplicated): void {
    if (this.replicated === reached) return;
    if (!reached) {
      this.logger.warn({ reason: why?.message }, "writes do not reach REDIS_MIN_REPLICAS replicas; they answer 503");
    } else if (this.replicated === false) {
      this.logger.info("writes reach REDIS_MIN_REPLICAS replicas again");
    }
    this.replicated = reached;
  }
}

/**
 * Runs `write` on the connection `key` is written on, then WAITs there for
 * `ack.minReplicas`. `beforeWait` runs right before the WAIT is sent (the
 * write coalescing's hold, so the WAITs of one loop turn leave together).
 */
export async function writeAcknowledged<T>(
  client: RedisClient,
  key: string,
  ack: ReplicaAck,
  write: (connection: Redis) => Promise<T>,
  beforeWait: () => void,
): Promise<T> {
  const connection = await connectionFor(client, key);
  const socket = connection.stream;
  const result = await write(connection).catch((e: unknown) => failed(client, e));
  // Only microtasks ran since the write's answer came in on `socket`: a different stream means a new connection.
  if (connection.stream !== socket || !socket.writable || connection.status !== "ready") {
    throw new NotReplicated("the connection was replaced after the write: its replication is unknown");
  }
  beforeWait();
  const replicas = await connection.wait(ack.minReplicas, ack.timeoutMs).catch((e: unknown) => failed(client, e));
  if (replicas < ack.minReplicas) {
    throw new NotReplicated(
      `${replicas} of ${ack.minReplicas} replicas acknowledged the write within ${ack.timeoutMs} ms`,
    );
  }
  return result;
}

function failed(client: RedisClient, error: unknown): never {
  noteFailure(client, error);
  throw error;
}
