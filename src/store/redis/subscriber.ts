/**
 * One Redis connection in (sharded) subscriber mode, kept subscribed to a set
 * of shard channels: SSUBSCRIBE as channels are added, SUNSUBSCRIBE as they
 * go, and after every reconnect SSUBSCRIBE to all of them again — then it
 * reports them as resubscribed, because what was published while it was away
 * never reached it (pub/sub keeps nothing). ioredis' own resubscribing is off:
 * it neither waits for the answer nor reports it.
 *
 * A PING now and then (`ping`) makes a connection whose server went silent
 * fail (the socket time-out of src/store/redis/connection.ts), so it reconnects.
 */
import type { Redis } from "ioredis";
import { Failure } from "../../services/failure.js";

export interface SubscriberEvents {
  message(channel: string, message: string): void;
  /** These channels are subscribed again after the connection was lost. */
  resubscribed(channels: readonly string[]): void;
  /** The connection was lost (it reconnects by itself). */
  lost(): void;
  /** The server refused to subscribe the channel (e.g. MOVED: its slot is served elsewhere). */
  refused?(channel: string): void;
}

interface Waiter {
  resolve(): void;
  reject(e: Failure): void;
}

export class SubscriberConnection {
  private client: Redis | undefined;
  private readonly channels = new Set<string>();
  private readonly waiters = new Map<string, Set<Waiter>>();
  private closed = false;

  /** `connect` makes the connection (lazily, at the first channel). */
  constructor(
    private readonly connect: () => Redis,
    private readonly events: SubscriberEvents,
    private readonly timeoutMs: number,
  ) {}

  get channelNames(): ReadonlySet<string> {
    return this.channels;
  }

  /** Subscribes; resolves once Redis confirmed it, `unavailable` after `timeoutMs` without. */
  add(channel: string): Promise<void> {
    if (this.closed) return Promise.reject(new Failure("unavailable", { detail: "the store is closed" }));
    this.channels.add(channel);
    const done = this.confirmation(channel);
    const client = this.ensureClient();
    if (client.status === "ready") void this.send(client, [channel], false);
    return done;
  }

  remove(channel: string): void {
    if (!this.channels.delete(channel)) return;
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
    this.client?.disconnect();
    for (const [channel] of this.waiters) this.fail(channel, new Failure("unavailable", { detail: "store closed" }));
  }

  private confirmation(channel: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const set = this.waiters.get(channel) ?? new Set<Waiter>();
      this.waiters.set(channel, set);
      const timer = setTimeout(() => {
        set.delete(waiter);
        if (set.size === 0) this.waiters.delete(channel);
        reject(
          new Failure("unavailable", {
            cause: new Error(`SSUBSCRIBE not confirmed within ${this.timeoutMs} ms`),
          }),
        );
      }, this.timeoutMs);
      const waiter: Waiter = {
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      set.add(waiter);
    });
  }

  private confirm(channels: readonly string[]): void {
    for (const channel of channels) {
      const set = this.waiters.get(channel);
      this.waiters.delete(channel);
      for (const w of set ?? []) w.resolve();
    }
  }

  private fail(channel: string, e: Failure): void {
    const set = this.waiters.get(channel);
    this.waiters.delete(channel);
    for (const w of set ?? []) w.reject(e);
  }

  private ensureClient(): Redis {
    if (this.client !== undefined) return this.client;
    const client = this.connect();
    this.client = client;
    let wasReady = false;
    client.on("smessage", (channel: string, message: string) => this.events.message(channel, message));
    client.on("error", () => {}); // connection trouble: the store's own connection logs it
    client.on("close", () => {
      if (wasReady && !this.closed) this.events.lost();
    });
    client.on("ready", () => {
      const again = wasReady;
      wasReady = true;
      if (this.channels.size > 0) void this.send(client, [...this.channels], again);
    });
    return client;
  }

  /**
   * SSUBSCRIBE, one channel per command (on a Cluster node one command may
   * not span slots). A channel the connection dropped before confirming is
   * subscribed by the next `ready`; one the server refused is reported.
   */
  private async send(client: Redis, channels: readonly string[], again: boolean): Promise<void> {
    const done: string[] = [];
    await Promise.all(
      channels.map((channel) =>
        client.ssubscribe(channel).then(
          () => done.push(channel),
          (e: unknown) => {
            if (e instanceof Error && e.name === "ReplyError") this.events.refused?.(channel);
          },
        ),
      ),
    );
    this.confirm(done);
    if (again && done.length > 0) this.events.resubscribed(done);
  }
}
