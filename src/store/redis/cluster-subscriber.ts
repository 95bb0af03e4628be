/**
 * Sharded pub/sub on a Redis Cluster: a shard channel is served by the master
 * of its slot only, so there is one subscriber connection per master (per
 * instance, never per channel or per watcher), and each channel is subscribed
 * on the master that holds its slot (cluster-slot.ts) according to the
 * Cluster client's slot map.
 *
 * When a master's connection is lost, the slot map is refreshed and channels
 * whose slot moved (a failover, a resharding) are subscribed on their new
 * master, then reported as resubscribed so their events are read again; the
 * channels that stayed are reported by their connection when it is back.
 * ioredis' `shardedSubscribers` is not used: it resubscribes without waiting
 * for the answer or saying so.
 */
import type { Cluster, Redis } from "ioredis";
import { Failure } from "../../services/failure.js";
import { clusterSlot } from "./cluster-slot.js";
import { type SubscriberEvents, SubscriberConnection } from "./subscriber.js";

/** What the notifications need from a subscriber: one connection, or one per master. */
export interface ChannelSubscriber {
  add(channel: string): Promise<void>;
  remove(channel: string): void;
  ping(): void;
  close(): void;
}

export class ClusterSubscriber implements ChannelSubscriber {
  private readonly shards = new Map<string, SubscriberConnection>();
  /** Channel → the master (`host:port`) it is subscribed on. */
  private readonly routes = new Map<string, string>();
  private remapping = false;
  private closed = false;

  constructor(
    private readonly cluster: Cluster,
    private readonly connectTo: (host: string, port: number) => Redis,
    private readonly events: SubscriberEvents,
    private readonly timeoutMs: number,
  ) {}

  add(channel: string): Promise<void> {
    const node = this.nodeOf(channel);
    if (node === undefined) {
      return Promise.reject(
        new Failure("unavailable", { cause: new Error("the Cluster's slot map is not known yet") }),
      );
    }
    this.routes.set(channel, node);
    return this.shard(node).add(channel);
  }

  remove(channel: string): void {
    const node = this.routes.get(channel);
    this.routes.delete(channel);
    if (node !== undefined) this.shards.get(node)?.remove(channel);
  }

  ping(): void {
    for (const shard of this.shards.values()) shard.ping();
  }

  close(): void {
    this.closed = true;
    for (const shard of this.shards.values()) shard.close();
    this.shards.clear();
  }

  private nodeOf(channel: string): string | undefined {
    return this.cluster.slots[clusterSlot(channel)]?.[0];
  }

  private shard(node: string): SubscriberConnection {
    let shard = this.shards.get(node);
    if (shard === undefined) {
      const at = node.lastIndexOf(":");
      const [host, port] = [node.slice(0, at), Number(node.slice(at + 1))];
      shard = new SubscriberConnection(
        () => this.connectTo(host, port),
        { ...this.events, lost: () => this.lost(), refused: () => this.lost() },
        this.timeoutMs,
        {
          groupOf: (channel) => String(clusterSlot(channel)), // one command may not span slots
          reachable: () => this.cluster.status === "ready",
        },
      );
      this.shards.set(node, shard);
    }
    return shard;
  }

  /** A master's connection dropped, or it refused a channel (MOVED): maybe slots moved. */
  private lost(): void {
    this.events.lost();
    if (this.remapping || this.closed) return;
    this.remapping = true;
    this.cluster.refreshSlotsCache(() => {
      this.remapping = false;
      if (!this.closed) this.remap();
    });
  }

  /** Moves every channel whose slot has another master now, and closes connections left with nothing to do. */
  private remap(): void {
    for (const [channel, node] of [...this.routes]) {
      const now = this.nodeOf(channel);
      if (now === undefined || now === node) continue;
      this.shards.get(node)?.remove(channel);
      this.routes.set(channel, now);
      this.shard(now)
        .add(channel)
        .then(
          () => this.events.resubscribed([channel]),
          () => {}, // not confirmed: the next loss remaps again, and the watch hub's sweep reads it meanwhile
        );
    }
    const owners = new Set(this.cluster.slots.map((nodes) => nodes[0]));
    for (const [node, shard] of [...this.shards]) {
      if (shard.channelNames.size > 0 || owners.has(node)) continue;
      shard.close();
      this.shards.delete(node);
    }
  }
}
