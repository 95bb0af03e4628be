/**
 * The embedded store of the demo mode and of service tests. It keeps the same
 * documented keys and fields as Redis in a tiny Redis-like key space
 * (src/store/memory/keyspace.ts), so it passes the same contract suite and its contents
 * can be inspected key by key. Its admin functions go through the shared admin
 * front (src/store/checked-admin.ts) to its raw admin operations (src/store/memory/admin.ts), the
 * conversion follower's through the shared conversion front
 * (src/store/conversion-steps.ts) to its raw conversion operations
 * (src/store/memory/conversions.ts).
 *
 * `setUnavailable(true)` makes every call fail with `Failure("unavailable")`,
 * which lets service tests exercise the 503 path without a Redis.
 */
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
import { CheckedAdmin } from "../checked-admin.js";
import { lookUpPassphrase } from "../channels/lookup-passphrase.js";
import { ChannelSteps } from "../channels/steps.js";
import { ConversionSteps } from "../conversion-steps.js";
import { guessTaken, keepGuessIn, takeGuessIn } from "../guesses.js";
import {
  CONVERSION_TTL_SECONDS,
  IDEMPOTENCY_TTL_SECONDS,
  type KeySchema,
  keySchema,
  MUTE_EVENTS_MAXLEN,
} from "../schema/keys.js";
import { MemoryAdmin } from "./admin.js";
import { MemoryChannels } from "./channels.js";
import { MemoryConversions } from "./conversions.js";
import { MemoryConversionQueue } from "./conversion-queue.js";
import { ConversionQueueSteps } from "../conversion-queue-steps.js";
import { MemoryIdempotency } from "./idempotency.js";
import { MemoryKeyspace } from "./keyspace.js";
import { MemoryPstnEvents } from "./pstn-events.js";
import { MemoryPhoneLine } from "./line.js";
import { parseLineSnapshot } from "../schema/line-records.js";
import { muteEventFields, muteFlag, muteMetaValue, openWhiteboard } from "../schema/channel-records.js";

export interface MemoryStoreOptions {
  keyPrefix?: string;
  /** The keys of the passphrase index (PASSPHRASE_KEYS); default the development key. */
  passphraseKeys?: KeyRing;
  /** Milliseconds since the epoch; injectable so tests can move time (expiry). */
  now?: () => number;
  /** How long a conversion task's record and changes stream outlive its last change; default 7 days. */
  retentionSeconds?: number;
  /** How long the answer of a call sent with an Idempotency-Key is kept; default 24 hours. */
  idempotencyTtlSeconds?: number;
  /** SECRETS_KEYS, which seal the whiteboard record's secrets; default the development key. */
  secretsKeys?: KeyRing;
  /** The phone line's lease and size; default DEFAULT_LINE_LIMITS. */
  line?: LineLimits;
}

export class MemoryStore extends CheckedAdmin implements AdminStore {
  readonly keys: KeySchema;
  /** The key space holding the records (tests read and write it raw, as other services would Redis). */
  readonly data: MemoryKeyspace;
  protected readonly primitives: MemoryAdmin;
  readonly conversions: ConversionSteps;
  readonly conversionQueue: ConversionQueueSteps;
  readonly pstnEvents: MemoryPstnEvents;
  readonly line: MemoryPhoneLine;
  readonly idempotency: MemoryIdempotency;
  readonly channels: ChannelSteps;
  protected readonly secretsKeys: KeyRing;
  private unavailable = false;
  private closed = false;

  constructor(options: MemoryStoreOptions = {}) {
    super();
    this.keys = keySchema(options.keyPrefix, options.passphraseKeys);
    this.data = new MemoryKeyspace(options.now);
    this.secretsKeys = options.secretsKeys ?? developmentKeyRing("SECRETS_KEYS");
    this.primitives = new MemoryAdmin(this.data, this.keys, () => this.guard(), this.secretsKeys);
    const retentionSeconds = options.retentionSeconds ?? CONVERSION_TTL_SECONDS;
    const records = new MemoryConversions(this.data, this.keys, () => this.guard(), retentionSeconds);
    this.conversions = new ConversionSteps(records);
    this.conversionQueue = new ConversionQueueSteps(
      new MemoryConversionQueue(this.data, this.keys, () => this.guard(), retentionSeconds),
      records,
      this.conversions,
      this.secretsKeys,
    );
    this.pstnEvents = new MemoryPstnEvents(this.data, this.keys, () => this.guard());
    this.line = new MemoryPhoneLine(
      this.data,
      this.keys,
      () => this.guard(),
      options.line ?? DEFAULT_LINE_LIMITS,
      (ref, id) => this.pstnEvents.notifications.publish(ref, id),
    );
    const idempotencyTtlSeconds = options.idempotencyTtlSeconds ?? IDEMPOTENCY_TTL_SECONDS;
    this.idempotency = new MemoryIdempotency(this.data, this.keys, () => this.guard(), idempotencyTtlSeconds);
    this.channels = new ChannelSteps(
      new MemoryChannels(this.data, this.keys, () => this.guard()),
      this.primitives,
      this.keys,
      this.data.now,
    );
  }

  /** While on, every call throws `Failure("unavailable")`, as a Redis outage would. */
  setUnavailable(unavailable: boolean): void {
    this.unavailable = unavailable;
  }

  async lookupPassphrase(project: string, passphrase: string): Promise<PassphraseRecord | undefined> {
    this.guard();
    return lookUpPassphrase(
      this.channels,
      async (digest) => this.data.hashFields(this.keys.passphraseByHash(digest)),
      project,
      passphrase,
    );
  }

  async getWhiteboard(project: string): Promise<WhiteboardSettings | undefined> {
    this.guard();
    return openWhiteboard(this.secretsKeys, project, this.data.hashFields(this.keys.whiteboard(project)));
  }

  async setMute(change: MuteChange): Promise<void> {
    this.guard();
    const muteKey = this.keys.pstnMute(change.project, change.channel);
    const eventsKey = this.keys.pstnEvents(change.project, change.channel);
    const metaKey = this.keys.pstnMuteMeta(change.project, change.channel);
    // Check every type before writing anything, so a bad key never leaves part of a change.
    this.data.checkType(muteKey, "hash");
    this.data.checkType(metaKey, "hash");
    const stream = this.data.writableStream(eventsKey); // creates nothing yet
    this.data.writableHash(muteKey).set(change.uid, muteFlag(change.mute));
    const id = this.data.append(eventsKey, stream, muteEventFields(change), MUTE_EVENTS_MAXLEN);
    this.data.writableHash(metaKey).set(change.uid, muteMetaValue(change, id));
    // As the script does: a channel created with an expiry takes its mute keys with it.
    const expiresAt =
      change.expireAt ?? this.data.get(this.keys.channelRecord(change.project, change.channel))?.expiresAt;
    if (expiresAt !== undefined)
      for (const key of [muteKey, eventsKey, metaKey]) this.data.expireIn(key, expiresAt - this.data.now());
    this.pstnEvents.notifications.publish(change, id);
  }

  async getPstnSnapshot(project: string, channel: string): Promise<PstnSnapshot> {
    this.guard();
    const hash = (key: string) => {
      const entry = this.data.get(key);
      return entry?.type === "hash" ? entry.fields : new Map<string, string>();
    };
    const stream = this.data.get(this.keys.pstnEvents(project, channel));
    const newest = stream?.type === "stream" ? stream.entries.at(-1)?.id : undefined;
    const k = this.keys.channelKeys(project, channel);
    const hashes = {
      mute: hash(k.mute),
      meta: hash(k.meta),
      line: hash(k.line),
      policy: Object.fromEntries(hash(k.policy)),
    };
    return parseLineSnapshot(hashes, newest ?? "0-0");
  }

  async takeGuess(callerKey: string, slot: string, limit: number, windowSeconds: number): Promise<GuessTaken> {
    this.guard();
    const key = this.keys.guesses(callerKey);
    const waitMs = takeGuessIn(this.data.writableSortedSet(key), slot, limit, windowSeconds * 1000, this.data.now());
    if (waitMs === 0) this.data.expireIn(key, windowSeconds * 1000);
    return guessTaken(waitMs);
  }

  async returnGuess(callerKey: string, slot: string): Promise<void> {
    this.guard();
    const entry = this.data.get(this.keys.guesses(callerKey));
    if (entry?.type === "zset") entry.scores.delete(slot);
  }

  async keepGuess(callerKey: string, slot: string): Promise<void> {
    this.guard();
    const entry = this.data.get(this.keys.guesses(callerKey));
    if (entry?.type === "zset") keepGuessIn(entry.scores, slot);
  }

  async ping(): Promise<void> {
    this.guard();
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  private guard(): void {
    if (this.unavailable || this.closed) {
      throw new Failure("unavailable", { cause: new Error(this.closed ? "store closed" : "store set unavailable") });
    }
  }
}
