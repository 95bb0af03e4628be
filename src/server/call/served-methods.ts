/**
 * The methods boardline serves: each binds a method descriptor of the
 * contract (gen/) to the domain call behind it — unary methods to a call that
 * answers once, server-streaming ones to a call that yields messages. Every
 * transport derives its paths from these lists: the JSON routes from the
 * methods' `google.api.http` annotations, the RPC paths from their names.
 */
import type {
  DescMessage,
  DescMethodServerStreaming,
  DescMethodUnary,
  MessageInitShape,
  MessageShape,
} from "@bufbuild/protobuf";
import { ChannelAdminService } from "../../../gen/channel/v1/channel_admin_pb.js";
import { PstnService } from "../../../gen/channel/v1/pstn_pb.js";
import { WhiteboardService } from "../../../gen/whiteboard/v1/whiteboard_pb.js";
import type { ChannelAdmin } from "../../services/channel/admin.js";
import type { WhiteboardSettingsAdmin } from "../../services/channel/whiteboard-settings.js";
import type { ConversionTasks } from "../../services/conversion/tasks.js";
import type { LineReports } from "../../services/pstn/line-reports.js";
import type { LineModeration } from "../../services/pstn/moderation.js";
import type { PstnControl } from "../../services/pstn/mute.js";
import type { PstnStateReader } from "../../services/pstn/read-state.js";
import type { PstnWatches } from "../../services/pstn/watch-events.js";
import type { Caller } from "../../services/ports.js";
import type { WhiteboardConversions } from "../../services/conversion/convert.js";
import type { Cancellation } from "./cancellation.js";
import type { WatchKind } from "../ops/watch-metrics.js";

/** The request header (JSON routes) and metadata key (gRPC, gRPC-Web, Connect) of safe retries. */
export const IDEMPOTENCY_KEY_HEADER = "idempotency-key";

/** The methods that honour an Idempotency-Key (their bindings below pass it on); every other one ignores it. */
export const IDEMPOTENT_METHODS: readonly DescMethodUnary[] = [
  WhiteboardService.method.convertFile,
  ChannelAdminService.method.createChannel,
];

/** What a transport hands the domain call besides the request: the call's metadata it may use. */
export interface CallMetadata {
  /** The `Idempotency-Key` header or `idempotency-key` metadata, as sent (checked by the domain). */
  readonly idempotencyKey?: string | undefined;
}

export interface ServedMethod<I extends DescMessage = DescMessage, O extends DescMessage = DescMessage> {
  readonly method: DescMethodUnary<I, O>;
  /** The domain call; the caller is authenticated and the request validated by then. */
  invoke(
    caller: Caller,
    request: MessageShape<I>,
    cancellation: Cancellation,
    metadata: CallMetadata,
  ): Promise<MessageInitShape<O>>;
}

export interface ServedStream<I extends DescMessage = DescMessage, O extends DescMessage = DescMessage> {
  readonly method: DescMethodServerStreaming<I, O>;
  /**
   * The domain call; it yields until it is done, or until the call is
   * cancelled. Either the messages at once — the stream is answered when the
   * first one is there — or a promise of them that resolves when the stream
   * is established — answered then, before any message (a watch of events
   * that may not come for a long time).
   */
  invoke(
    caller: Caller,
    request: MessageShape<I>,
    cancellation: Cancellation,
  ): AsyncIterable<MessageInitShape<O>> | Promise<AsyncIterable<MessageInitShape<O>>>;
  /**
   * As server-sent events (the JSON route): each event's `id:` line, and the
   * request field a `Last-Event-ID` header fills, so a client resumes after
   * the last event it got.
   */
  readonly resume?: {
    readonly field: string;
    eventId(message: MessageShape<O>): string;
  };
  /** A watch (the metrics count it by kind): and the time (epoch ms) of a message's event, when it has one. */
  readonly watch?: {
    readonly kind: WatchKind;
    eventMs(message: MessageInitShape<O>): number | undefined;
  };
}

/** Either kind, where only the descriptor matters (routes, paths, metrics). */
export type Served = ServedMethod | ServedStream;

export function isStream(served: Served): served is ServedStream {
  return served.method.methodKind === "server_streaming";
}

/** The domain services a server serves. */
export interface Domain {
  readonly pstn: PstnControl;
  readonly pstnState: PstnStateReader;
  readonly whiteboard: WhiteboardConversions;
  readonly conversions: ConversionTasks;
  readonly pstnWatch: PstnWatches;
  readonly lineReports: LineReports;
  readonly lineModeration: LineModeration;
  readonly channelAdmin: ChannelAdmin;
  readonly whiteboardSettings: WhiteboardSettingsAdmin;
}

function served<I extends DescMessage, O extends DescMessage>(
  method: DescMethodUnary<I, O>,
  invoke: ServedMethod<I, O>["invoke"],
): ServedMethod {
  // The pipeline only ever calls invoke with a message of `method.input`.
  return { method, invoke } as unknown as ServedMethod;
}

export function servedMethods(domain: Domain): ServedMethod[] {
  return [
    served(PstnService.method.mute, (caller, req) => domain.pstn.mute(caller, req)),
    served(PstnService.method.getPstnState, (caller, req) => domain.pstnState.getState(caller, req)),
    ...lineMethods(domain),
    served(WhiteboardService.method.convertFile, (caller, req, cancellation, metadata) =>
      domain.whiteboard.convertFile(caller, req, cancellation.signal, metadata.idempotencyKey),
    ),
    served(WhiteboardService.method.getConversion, (caller, req) => domain.conversions.getConversion(caller, req)),
    served(WhiteboardService.method.cancelConversion, (caller, req, cancellation) =>
      domain.conversions.cancelConversion(caller, req, cancellation.signal),
    ),
    ...channelAdminMethods(domain),
  ];
}

/** The phone line: the gateway's reports (scope `pstn.gateway`) and the host's moderation. */
function lineMethods({ lineReports, lineModeration }: Domain): ServedMethod[] {
  const m = PstnService.method;
  return [
    served(m.reportLine, (caller, req) => lineReports.report(caller, req)),
    served(m.syncLine, (caller, req) => lineReports.sync(caller, req)),
    served(m.muteAll, (caller, req) => lineModeration.muteAll(caller, req)),
    served(m.setPstnPolicy, (caller, req) => lineModeration.setPolicy(caller, req)),
    served(m.lowerHands, (caller, req) => lineModeration.lowerHands(caller, req)),
  ];
}

/** ChannelAdminService (scope `channels.admin`; the domain checks it). */
function channelAdminMethods({ channelAdmin, whiteboardSettings }: Domain): ServedMethod[] {
  const m = ChannelAdminService.method;
  return [
    served(m.createChannel, (caller, req, _cancellation, metadata) =>
      channelAdmin.createChannel(caller, req, metadata.idempotencyKey),
    ),
    served(m.getChannel, (caller, req) => channelAdmin.getChannel(caller, req)),
    served(m.listChannels, (caller, req) => channelAdmin.listChannels(caller, req)),
    served(m.rotatePassphrase, (caller, req) => channelAdmin.rotatePassphrase(caller, req)),
    served(m.deleteChannel, (caller, req) => channelAdmin.deleteChannel(caller, req)),
    served(m.setWhiteboardSettings, (caller, req) => whiteboardSettings.setSettings(caller, req)),
    served(m.getWhiteboardSettings, (caller) => whiteboardSettings.getSettings(caller)),
    served(m.clearWhiteboardSettings, (caller) => whiteboardSettings.clearSettings(caller)),
  ];
}

export function servedStreams(domain: Domain): ServedStream[] {
  const stream = <I extends DescMessage, O extends DescMessage>(
    method: DescMethodServerStreaming<I, O>,
    watch: ServedStream<I, O>["watch"],
    invoke: ServedStream<I, O>["invoke"],
    resume?: ServedStream<I, O>["resume"],
  ) => ({ method, invoke, watch, ...(resume === undefined ? {} : { resume }) }) as unknown as ServedStream;
  return [
    stream(
      WhiteboardService.method.watchConversion,
      { kind: "conversion", eventMs: (task) => timestampMs(task.updatedAt) },
      (caller, req, cancellation) => domain.conversions.watchConversion(caller, req, cancellation.signal),
    ),
    stream(
      PstnService.method.watchPstnEvents,
      { kind: "pstn_events", eventMs: (event) => timestampMs(event.at) },
      (caller, req, cancellation) => domain.pstnWatch.watchPstnEvents(caller, req, cancellation),
      // The cursor, so an EventSource-style client resumes with Last-Event-ID.
      { field: "after", eventId: (event) => event.cursor },
    ),
  ];
}

/** A Timestamp's epoch ms; undefined for none. */
function timestampMs(t: { seconds?: bigint; nanos?: number } | undefined): number | undefined {
  return t === undefined ? undefined : Number(t.seconds ?? 0n) * 1000 + Math.floor((t.nanos ?? 0) / 1e6);
}

/** `/package.Service/Method`, the path of a method on every RPC protocol. */
export function rpcPath(method: DescMethodUnary | DescMethodServerStreaming): string {
  return `/${method.parent.typeName}/${method.name}`;
}
