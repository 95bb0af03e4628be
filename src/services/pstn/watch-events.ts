/**
 * WatchPstnEvents: the mute events of channels of the caller's project, for
 * the telephone gateway. Transport-free: the caller is authenticated and the
 * request validated. Channel ids are taken within the caller's project, so
 * another project's channel is simply one nobody muted in.
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  type PstnEvent,
  PstnEventKind,
  PstnEventSchema,
  PstnLeaveReason,
  type WatchPstnEventsRequest,
} from "../../../gen/channel/v1/pstn_pb.js";
import { Failure } from "../failure.js";
import { type Caller, type MuteEvent, PSTN_GATEWAY_SCOPE } from "../ports.js";
import type { Cancellation } from "../push-stream.js";
import { channelHash, decodeAfter, WatchCursor } from "./cursor.js";
import type { PstnWatchHub } from "./watch-hub.js";
import { setterMessage } from "./read-state.js";
import type { Present } from "./watch.js";
import { TokenRefused } from "../token-refusal.js";

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
   * ordinary error answer); then the events, until the client goes away. The
   * watch hands them to a taker too (`PushIterator`).
   */
  async watchPstnEvents(
    caller: Caller,
    req: WatchPstnEventsRequest,
    cancellation?: Cancellation,
  ): Promise<AsyncIterable<PstnEventMessage>> {
    if (!caller.scopes.has(PSTN_GATEWAY_SCOPE)) {
      throw new Failure("permission_denied", {
        detail: `watching mute events needs a token with scope ${PSTN_GATEWAY_SCOPE}`,
        cause: new TokenRefused("missing_scope"),
      });
    }
    return this.watch(caller.project, req.channelIds, req.after, messageOf, cancellation, req.includeLine);
  }

  /** The events of these channels of `project` after `after` (a cursor or an event id; "" = from now on). */
  open(
    project: string,
    channelIds: readonly string[],
    after: string,
    signal?: AbortSignal,
  ): Promise<AsyncIterable<ChannelEvent>> {
    return this.watch(project, channelIds, after, channelEvent, signal && cancellationOf(signal));
  }

  private async watch<T>(
    project: string,
    channelIds: readonly string[],
    after: string,
    present: Present<T>,
    cancellation?: Cancellation,
    lineEvents = false,
  ): Promise<AsyncIterable<T>> {
    const hashes = channelIds.map(channelHash);
    const start = decodeAfter(after, hashes);
    if (channelIds.length > this.maxChannels) {
      throw new Failure("rate_limited", {
        detail: `at most ${this.maxChannels} channels per watch (MAX_WATCH_CHANNELS); spread them over several watches`,
      });
    }
    const refs = channelIds.map((channel) => ({ project, channel }));
    return this.hub.open(refs, start, new WatchCursor(hashes, start), present, cancellation, lineEvents);
  }
}

/** An AbortSignal (the operator CLI's Ctrl-C) as a cancellation. */
function cancellationOf(signal: AbortSignal): Cancellation {
  return {
    get aborted() {
      return signal.aborted;
    },
    onAbort(what) {
      if (signal.aborted) what.end();
      else signal.addEventListener("abort", () => what.end(), { once: true });
    },
  };
}

function channelEvent(channelId: string, event: MuteEvent, cursor: string): ChannelEvent {
  return { channelId, event, cursor };
}

/**
 * The message of an event: one object for every watch that gets the same
 * event with the same cursor (every one-channel watch of a channel does), so
 * a transport encodes it once for all of them (src/server/call/encoded-once.ts).
 */
const messages = new WeakMap<MuteEvent, PstnEvent>();
const KINDS = {
  join: PstnEventKind.JOIN,
  leave: PstnEventKind.LEAVE,
  hand: PstnEventKind.HAND,
  policy: PstnEventKind.POLICY,
  mute_all: PstnEventKind.MUTE_ALL,
} as const;

const REASONS = {
  reported: PstnLeaveReason.REPORTED,
  sync: PstnLeaveReason.SYNC,
  lease: PstnLeaveReason.LEASE,
} as const;

/** The fields of an event beyond those every mute change has always carried. */
function lineFields(event: MuteEvent): Omit<MessageInitShape<typeof PstnEventSchema>, "$typeName"> {
  return {
    kind: event.kind === undefined ? PstnEventKind.MUTE : KINDS[event.kind],
    setter: setterMessage(event.kind === undefined ? (event.setter ?? "host") : event.setter),
    callerId: event.callerId ?? "",
    handRaised: event.hand ?? false,
    muteAll: event.all ?? false,
    ...(event.policy === undefined ? {} : { policy: event.policy }),
    changed: event.changed ?? 0,
    leaveReason: event.reason === undefined ? PstnLeaveReason.UNSPECIFIED : REASONS[event.reason],
  };
}

function messageOf(channelId: string, event: MuteEvent, cursor: string): PstnEvent {
  const known = messages.get(event);
  if (known !== undefined && known.cursor === cursor && known.channelId === channelId) return known;
  const message = create(PstnEventSchema, {
    eventId: event.id,
    cursor,
    channelId,
    uid: event.uid,
    mute: event.mute,
    by: event.by,
    at: timestampFromMs(event.at),
    ...lineFields(event),
  });
  messages.set(event, message);
  return message;
}
