/**
 * The Redis store's `PstnNotifications`: the mute script SPUBLISHes each new
 * event id on the channel's shard channel (`…:pstn-notify`, keys.ts), and one
 * subscriber per store — one connection on a single node or through Sentinel,
 * one per master on a Cluster (src/store/redis/cluster-subscriber.ts) — SSUBSCRIBEs to
 * the channels being watched, counted: the first `subscribe` of a channel
 * subscribes, its last `unsubscribe` unsubscribes. The connection is made at
 * the first subscription, so an instance nobody watches has none.
 */
import { Cluster, Redis, type RedisOptions } from "ioredis";
import { Failure } from "../../services/failure.js";
import type { ChannelRef, PstnNotificationListener, PstnNotifications } from "../../services/ports.js";
import type { KeySchema } from "../schema/keys.js";
import { type ChannelSubscriber, ClusterSubscriber } from "./cluster-subscriber.js";
import type { RedisClient } from "./connection.js";
import { type StoreObserver, UNOBSERVED } from "../../services/store-observer.js";
import { type SubscriberEvents, SubscriberConnection } from "./subscriber.js";

/** How often an idle subscriber connection is asked for a sign of life (PING). */
const PING_INTERVAL_MS = 5_000;

interface Subscription {
  readonly ref: ChannelRef;
  count: number;
  active: Promise<void>;
  failed: boolean;
}

export class RedisNotifications implements PstnNotifications {
  private readonly listeners = new Set<PstnNotificationListener>();
  private readonly subscriptions = new Map<string, Subscription>();
  private subscriber: ChannelSubscriber | undefined;
  private pinger: NodeJS.Timeout | undefined;
  private closed = false;
  /** Told of each re-subscription (the metrics). */
  observer: StoreObserver = UNOBSERVED;

  constructor(
    private readonly client: RedisClient,
    private readonly keys: KeySchema,
    private readonly timeoutMs: number,
  ) {}

  listen(listener: PstnNotificationListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  subscribe(ref: ChannelRef): Promise<void> {
    if (this.closed) return Promise.reject(new Failure("unavailable", { detail: "the store is closed" }));
    const name = this.keys.pstnNotify(ref.project, ref.channel);
    let s = this.subscriptions.get(name);
    if (s === undefined) {
      s = { ref, count: 0, active: Promise.resolve(), failed: true };
      this.subscriptions.set(name, s);
    }
    s.count++;
    if (s.failed) {
      const subscription = s;
      subscription.failed = false;
      subscription.active = this.ensureSubscriber().add(name);
      subscription.active.catch(() => {
        subscription.failed = true; // the next subscribe tries again
      });
    }
    return s.active;
  }

  unsubscribe(ref: ChannelRef): void {
    const name = this.keys.pstnNotify(ref.project, ref.channel);
    const s = this.subscriptions.get(name);
    if (s === undefined || --s.count > 0) return;
    this.subscriptions.delete(name);
    this.subscriber?.remove(name);
  }

  close(): void {
    this.closed = true;
    clearInterval(this.pinger);
    this.subscriber?.close();
  }

  private ensureSubscriber(): ChannelSubscriber {
    if (this.subscriber !== undefined) return this.subscriber;
    const events: SubscriberEvents = {
      message: (name, eventId) => {
        const s = this.subscriptions.get(name);
        if (s !== undefined) for (const l of this.listeners) l.notified(s.ref, eventId);
      },
      resubscribed: (names) => {
        this.observer.onResubscribed(names.length);
        const refs = names.flatMap((name) => this.subscriptions.get(name)?.ref ?? []);
        if (refs.length > 0) for (const l of this.listeners) l.resubscribed(refs);
      },
      lost: () => {},
    };
    const client = this.client;
    this.subscriber =
      client instanceof Cluster
        ? new ClusterSubscriber(client, (host, port) => shardConnection(client, host, port), events, this.timeoutMs)
        : new SubscriberConnection(() => duplicateConnection(client), events, this.timeoutMs, {
            reachable: () => client.status === "ready",
          });
    this.pinger = setInterval(() => this.subscriber?.ping(), PING_INTERVAL_MS);
    this.pinger.unref();
    return this.subscriber;
  }
}

const SUBSCRIBER_OPTIONS = { autoResubscribe: false, connectionName: "boardline-notify" } as const;

/** A connection like the store's own (same server or Sentinel group, credentials, TLS, time-outs). */
function duplicateConnection(client: Redis): Redis {
  return client.duplicate({ ...SUBSCRIBER_OPTIONS, lazyConnect: false });
}

/** A connection to one master of the Cluster, set up like the Cluster client's own. */
function shardConnection(cluster: Cluster, host: string, port: number): Redis {
  const retry = cluster.options.clusterRetryStrategy;
  const options = {
    ...cluster.options.redisOptions,
    ...SUBSCRIBER_OPTIONS,
    host,
    port,
    enableOfflineQueue: false,
    retryStrategy: (times: number) => retry?.(times) ?? 500,
  };
  // The Cluster's node options, whose optional fields may hold `undefined`.
  return new Redis(options as Omit<RedisOptions, "replyMapping">);
}
