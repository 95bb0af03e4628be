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
import { PstnService } from "../../gen/channel/v1/pstn_pb.js";
import { WhiteboardService } from "../../gen/whiteboard/v1/whiteboard_pb.js";
import type { ConversionTasks } from "../services/conversion-tasks.js";
import type { PstnControl } from "../services/pstn.js";
import type { Caller } from "../services/ports.js";
import type { WhiteboardConversions } from "../services/whiteboard.js";
import type { Cancellation } from "./call-cancellation.js";

export interface ServedMethod<I extends DescMessage = DescMessage, O extends DescMessage = DescMessage> {
  readonly method: DescMethodUnary<I, O>;
  /** The domain call; the caller is authenticated and the request validated by then. */
  invoke(caller: Caller, request: MessageShape<I>, cancellation: Cancellation): Promise<MessageInitShape<O>>;
}

export interface ServedStream<I extends DescMessage = DescMessage, O extends DescMessage = DescMessage> {
  readonly method: DescMethodServerStreaming<I, O>;
  /** The domain call; it yields until it is done, or until the call is cancelled. */
  invoke(caller: Caller, request: MessageShape<I>, cancellation: Cancellation): AsyncIterable<MessageInitShape<O>>;
}

/** Either kind, where only the descriptor matters (routes, paths, metrics). */
export type Served = ServedMethod | ServedStream;

export function isStream(served: Served): served is ServedStream {
  return served.method.methodKind === "server_streaming";
}

/** The domain services a server serves. */
export interface Domain {
  readonly pstn: PstnControl;
  readonly whiteboard: WhiteboardConversions;
  readonly conversions: ConversionTasks;
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
    served(WhiteboardService.method.convertFile, (caller, req, cancellation) =>
      domain.whiteboard.convertFile(caller, req, cancellation.signal),
    ),
    served(WhiteboardService.method.getConversion, (caller, req) => domain.conversions.getConversion(caller, req)),
    served(WhiteboardService.method.cancelConversion, (caller, req, cancellation) =>
      domain.conversions.cancelConversion(caller, req, cancellation.signal),
    ),
  ];
}

export function servedStreams(domain: Domain): ServedStream[] {
  const stream = <I extends DescMessage, O extends DescMessage>(
    method: DescMethodServerStreaming<I, O>,
    invoke: ServedStream<I, O>["invoke"],
  ) => ({ method, invoke }) as unknown as ServedStream;
  return [
    stream(WhiteboardService.method.watchConversion, (caller, req, cancellation) =>
      domain.conversions.watchConversion(caller, req, cancellation.signal),
    ),
  ];
}

/** `/package.Service/Method`, the path of a method on every RPC protocol. */
export function rpcPath(method: DescMethodUnary | DescMethodServerStreaming): string {
  return `/${method.parent.typeName}/${method.name}`;
}
