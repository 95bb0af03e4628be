/**
 * WatchPstnEvents: the mute events of channels of the caller's project, for
 * the telephone gateway. Transport-free: the caller is authenticated and the
 * request validated. Channel ids are taken within the caller's project, so
 * another project's channel is simply one nobody muted in.
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type PstnEvent, PstnEventSchema, type WatchPstnEventsRequest } from "../../../gen/channel/v1/pstn_pb.js";
import { Failure } from "../failure.js";
import { type Caller, type Cancellation, type MuteEvent, PSTN_GATEWAY_SCOPE } from "../ports.js";
import { channelHash, decodeAfter, WatchCursor } from "./cursor.js";
import type { PstnWatchHub } from "./watch-hub.js";
import type { WatchedEvent } from "./watch.js";

type PstnEventMessage = MessageInitShape<typeof PstnEventSchema>;

/** An event of a watch: its channel, the event, and the cursor to resume after it. */
export interface ChannelEvent {
  readonly channelId: string;
  readonly event: MuteEvent;
  readonly cursor: string;
}

export class PstnWatches {
  constructor(
    private readonly hub: PstnWatchHub,
    /** MAX_WATCH_CHANNELS. */
    private readonly maxChannels: number,
  ) {}

  /**
   * Resolves once the watch is established (a failure to establish it is an
   * ordinary error answer); then the events, until the client goes away.
   */
  async watchPstnEvents(
    caller: Caller,
    req: WatchPstnEventsRequest,
    cancellation?: Cancellation,
  ): Promise<AsyncIterable<PstnEventMessage>> {
    if (!caller.scopes.has(PSTN_GATEWAY_SCOPE)) {
      throw new Failure("permission_denied", {
        detail: `watching mute events needs a token with scope ${PSTN_GATEWAY_SCOPE}`,
      });
    }
    const { channelIds } = req; // not the request: a watch lives long
    const watch = await this.watch(caller.project, channelIds, req.after, cancellation);
    return mapIterable(watch, (w) => messageOf(channelEvent(channelIds, w)));
  }

  /** The events of these channels of `project` after `after` (a cursor or an event id; "" = from now on). */
  async open(
    project: string,
    channelIds: readonly string[],
    after: string,
    signal?: AbortSignal,
  ): Promise<AsyncIterable<ChannelEvent>> {
    const watch = await this.watch(project, channelIds, after, signal && cancellationOf(signal));
    return mapIterable(watch, (w) => channelEvent(channelIds, w));
  }

  private watch(project: string, channelIds: readonly string[], after: string, cancellation?: Cancellation) {
    const hashes = channelIds.map(channelHash);
    const start = decodeAfter(after, hashes);
    if (channelIds.length > this.maxChannels) {
      throw new Failure("rate_limited", {
        detail: `at most ${this.maxChannels} channels per watch (MAX_WATCH_CHANNELS); spread them over several watches`,
      });
    }
    const refs = channelIds.map((channel) => ({ project, channel }));
    return this.hub.open(refs, start, new WatchCursor(hashes, start), cancellation);
  }
}

/** An AbortSignal (the operator CLI's Ctrl-C) as a cancellation. */
function cancellationOf(signal: AbortSignal): Cancellation {
  return {
    get aborted() {
      return signal.aborted;
    },
    onAbort(listener) {
      if (signal.aborted) listener();
      else signal.addEventListener("abort", listener, { once: true });
    },
  };
}

function channelEvent(channelIds: readonly string[], w: WatchedEvent): ChannelEvent {
  return { channelId: channelIds[w.index] as string, event: w.event, cursor: w.cursor };
}

/**
 * The message of an event: one object for every watch that gets the same
 * event with the same cursor (every one-channel watch of a channel does), so
 * a transport encodes it once for all of them (src/server/call/encoded-once.ts).
 */
const messages = new WeakMap<MuteEvent, PstnEvent>();
function messageOf(e: ChannelEvent): PstnEvent {
  const known = messages.get(e.event);
  if (known !== undefined && known.cursor === e.cursor && known.channelId === e.channelId) return known;
  const message = create(PstnEventSchema, {
    eventId: e.event.id,
    cursor: e.cursor,
    channelId: e.channelId,
    uid: e.event.uid,
    mute: e.event.mute,
    by: e.event.by,
    at: timestampFromMs(e.event.at),
  });
  messages.set(e.event, message);
  return message;
}

/**
 * `source` with each value mapped, passing `return` through (so a client going
 * away ends the source at once). A plain iterator, not an async generator or
 * function: an open watch waits in here, and a suspended one would hold a
 * frame per watch.
 */
function mapIterable<A, B>(source: AsyncIterable<A>, map: (a: A) => B): AsyncIterable<B> {
  return { [Symbol.asyncIterator]: () => new MappedIterator(source[Symbol.asyncIterator](), map) };
}

const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined };

class MappedIterator<A, B> implements AsyncIterator<B> {
  constructor(
    private readonly it: AsyncIterator<A>,
    private readonly map: (a: A) => B,
  ) {}

  next(): Promise<IteratorResult<B>> {
    return this.it.next().then((r) => (r.done === true ? DONE : { done: false, value: this.map(r.value) }));
  }

  return(): Promise<IteratorResult<B>> {
    return Promise.resolve(this.it.return?.()).then(() => DONE);
  }
}
