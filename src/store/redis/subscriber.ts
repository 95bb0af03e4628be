/**
 * One Redis connection in (sharded) subscriber mode, kept subscribed to a set
 * of shard channels: SSUBSCRIBE as channels are added, SUNSUBSCRIBE as they
 * go, and after every reconnect SSUBSCRIBE to all of them again — then it
 * reports them as resubscribed, because what was published while it was away
 * never reached it (pub/sub keeps nothing). ioredis' own resubscribing is off:
 * it neither waits for the answer nor reports it.
 *
 * The channels added in one event-loop turn go out together, as few commands
 * as the server takes (`groupOf`: on a Cluster node one command may not span
 * slots), at most `BATCH` channels each; so do the thousands of a resubscribe.
 * A channel's confirmation has `timeoutMs` from when its command was written
 * to the connection, judged after the loop read what arrived (deadline.ts): a
 * storm of watches keeping the loop busy does not fail subscriptions Redis
 * confirmed. One asked while there is no connection waits for it: from its
 * first failed attempt on, it has `timeoutMs` until it is written while Redis
 * is unreachable (`reachable`: the store's own connection is not ready), so a
 * watch fails as fast as before; while Redis answers the store, a connection
 * still being made during a storm (its attempts timing out on a busy loop)
 * has `CONNECTING_GRACE_MS`.
 *
 * A PING now and then (`ping`) makes a connection whose server went silent
 * fail (the socket time-out of src/store/redis/connection.ts), so it reconnects.
 */
import type { Redis } from "ioredis";
import { Failure } from "../../services/failure.js";
import { afterDeadline } from "../../loop-aware-deadline.js";

export interface SubscriberEvents {
  message(channel: string, message: string): void;
  /** These channels are subscribed again after the connection was lost. */
  resubscribed(channels: readonly string[]): void;
  /** The connection was lost (it reconnects by itself). */
  lost(): void;
  /** The server refused to subscribe the channel (e.g. MOVED: its slot is served elsewhere). */
  refused?(channel: string): void;
}

/** Channels per SSUBSCRIBE at most: a command, and its confirmations, stay small. */
const BATCH = 500;
/** How long channels wait for the subscriber connection while Redis answers the store's own. */
export const CONNECTING_GRACE_MS = 8_000;

interface Waiter {
  resolve(): void;
  reject(e: Failure): void;
}

/** Those waiting for a channel's confirmation, and its deadline once armed. */
interface Pending {
  readonly waiters: Set<Waiter>;
  cancelDeadline: (() => void) | undefined;
}

export class SubscriberConnection {
  private client: Redis | undefined;
  private readonly channels = new Set<string>();
  private readonly pending = new Map<string, Pending>();
  /** Added since the last write, sent together at the end of this loop turn. */
  private queued = new Set<string>();
  private flushing: NodeJS.Immediate | undefined;
  private closed = false;

  /**
   * `connect` makes the connection (lazily, at the first channel); `groupOf`
   * says which channels one command may carry together (the same group);
   * `reachable`, whether Redis answers the store's own connection now.
   */
  constructor(
    private readonly connect: () => Redis,
    private readonly events: SubscriberEvents,
    private readonly timeoutMs: number,
    private readonly o: { groupOf?: (channel: string) => string; reachable?: () => boolean } = {},
  ) {}

  get channelNames(): ReadonlySet<string> {
    return this.channels;
  }

  /** Subscribes; resolves once Redis confirmed it, `unavailable` when that takes longer than `timeoutMs`. */
  add(channel: string): Promise<void> {
    if (this.closed) return Promise.reject(new Failure("unavailable", { detail: "the store is closed" }));
    this.channels.add(channel);
    const done = this.confirmation(channel);
    const client = this.ensureClient();
    if (client.status === "ready") this.queue(channel);
    return done;
  }

  remove(channel: string): void {
    if (!this.channels.delete(channel)) return;
    this.queued.delete(channel);
    this.confirm([channel]); // nobody waits for it any more
    const client = this.client;
    if (client?.status === "ready") client.sunsubscribe(channel).catch(() => {});
  }

  /** Asks the server for a sign of life; a silent one fails the connection, which then reconnects. */
  ping(): void {
    if (this.client?.status === "ready" && this.channels.size > 0) this.client.ping().catch(() => {});
  }

  close(): void {
    this.closed = true;
    if (this.flushing !== undefined) clearImmediate(this.flushing);
    this.client?.disconnect();
    for (const [channel] of this.pending) this.fail(channel, new Failure("unavailable", { detail: "store closed" }));
  }

  private confirmation(channel: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let p = this.pending.get(channel);
      if (p === undefined) {
        p = { waiters: new Set(), cancelDeadline: undefined };
        this.pending.set(channel, p);
      }
      p.waiters.add({ resolve, reject });
    });
  }

  /** A connection attempt failed: the deadline of the channels not written yet starts now. */
  private armUnsent(): void {
    const ms = this.o.reachable?.() === true ? Math.max(this.timeoutMs, CONNECTING_GRACE_MS) : this.timeoutMs;
    const cause = () => new Error(`no subscriber connection to Redis within ${ms} ms`);
    for (const [channel, p] of this.pending) if (p.cancelDeadline === undefined) this.arm(channel, ms, cause);
  }

  /** (Re)starts the deadline of a channel someone waits for. */
  private arm(
    channel: string,
    ms = this.timeoutMs,
    cause = () => new Error(`SSUBSCRIBE not confirmed within ${ms} ms of being sent`),
  ): void {
    const p = this.pending.get(channel);
    if (p === undefined) return;
    p.cancelDeadline?.();
    p.cancelDeadline = afterDeadline(ms, () => {
      p.cancelDeadline = undefined;
      this.fail(channel, new Failure("unavailable", { cause: cause() }));
    });
  }

  private confirm(channels: readonly string[]): void {
    for (const channel of channels) {
      const p = this.pending.get(channel);
      if (p === undefined) continue;
      this.pending.delete(channel);
      p.cancelDeadline?.();
      for (const w of p.waiters) w.resolve();
    }
  }

  private fail(channel: string, e: Failure): void {
    const p = this.pending.get(channel);
    if (p === undefined) return;
    this.pending.delete(channel);
    p.cancelDeadline?.();
    for (const w of p.waiters) w.reject(e);
  }

  private queue(channel: string): void {
    this.queued.add(channel);
    this.flushing ??= setImmediate(() => {
      this.flushing = undefined;
      const channels = [...this.queued];
      this.queued = new Set();
      const client = this.client;
      // Not ready any more: the next `ready` subscribes every channel anyway.
      if (client?.status === "ready") this.send(client, channels, false);
    });
  }

  private ensureClient(): Redis {
    if (this.client !== undefined) return this.client;
    const client = this.connect();
    this.client = client;
    let wasReady = false;
    client.on("smessage", (channel: string, message: string) => this.events.message(channel, message));
    // Connection trouble (the store's own connection logs it): a failed attempt (through Sentinel
    // there may be no socket to close) starts the deadline of what is not written yet.
    client.on("error", () => this.armUnsent());
    client.on("close", () => {
      this.armUnsent();
      if (wasReady && !this.closed) this.events.lost();
    });
    client.on("ready", () => {
      const again = wasReady;
      wasReady = true;
      this.queued = new Set();
      if (this.channels.size > 0) this.send(client, [...this.channels], again);
    });
    return client;
  }

  /**
   * SSUBSCRIBE, the channels of a group together, `BATCH` at a time. A channel
   * the connection dropped before confirming is subscribed by the next
   * `ready`; those the server refused are reported.
   */
  private send(client: Redis, channels: readonly string[], again: boolean): void {
    const groups = new Map<string, string[]>();
    for (const channel of channels) {
      const group = this.o.groupOf?.(channel) ?? "";
      const list = groups.get(group);
      if (list === undefined) groups.set(group, [channel]);
      else list.push(channel);
    }
    for (const list of groups.values()) {
      for (let i = 0; i < list.length; i += BATCH) {
        const batch = list.slice(i, i + BATCH);
        for (const channel of batch) this.arm(channel);
        client.ssubscribe(...batch).then(
          () => this.subscribed(batch, again),
          (e: unknown) => {
            if (e instanceof Error && e.name === "ReplyError") for (const c of batch) this.events.refused?.(c);
          },
        );
      }
    }
  }

  private subscribed(batch: readonly string[], again: boolean): void {
    const still = batch.filter((channel) => this.channels.has(channel));
    this.confirm(still);
    if (again && still.length > 0) this.events.resubscribed(still);
  }
}
