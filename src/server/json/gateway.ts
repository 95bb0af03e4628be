/**
 * The JSON routes (src/server/json/routes.ts reads them off the `google.api.http`
 * annotations). A request here: auth (call pipeline, from the headers: a bad
 * token is answered before any of the body is read) → Content-Type → body
 * size (for a route with a body) → (call pipeline: the request from the JSON
 * body and the path variables → validation → domain call) → snake_case JSON, or the error
 * table's JSON body; a server-streaming method answers server-sent events
 * (event-stream.ts) once its first message is there.
 */
import { toJsonString } from "@bufbuild/protobuf";
import { CallCancellation } from "../call/cancellation.js";
import type { CallPipeline, StreamCall, UnaryCall } from "../call/pipeline.js";
import { type TransportFailure, toJsonError, transportError, unrunStatus } from "../call/error-table.js";
import { parseJsonRequest, requestFromPath } from "./request.js";
import { JsonRouteTable, type RouteMatch } from "./routes.js";
import {
  compactRequestId,
  dropHeaders,
  firstHeader,
  type NodeRequest,
  type NodeResponse,
  reply,
  sayingRequestId,
} from "../http/request-answer.js";
import { readBody } from "../http/read-body.js";
import { closeAfterAnswer } from "../http/h1-pipelining.js";
import { leaveBodyUnread } from "../http/unread-body.js";
import { writeEventStream } from "./event-stream.js";
import { IDEMPOTENCY_KEY_HEADER, isStream, type Served, type ServedStream } from "../call/served-methods.js";

const JSON_CONTENT_TYPE = /^application\/json\s*(;|$)/i;

type BodyRead =
  | { readonly kind: "ok"; readonly bytes: Uint8Array | undefined }
  | { readonly kind: "answered"; readonly failure: TransportFailure | "gone" };

export class JsonGateway {
  private readonly routes: JsonRouteTable;

  constructor(
    methods: readonly Served[],
    private readonly pipeline: CallPipeline,
    private readonly maxBodyBytes: number,
  ) {
    this.routes = JsonRouteTable.fromAnnotations(methods);
  }

  /** The route for the request; `{ allow }` for a known path with another method; undefined: not a JSON route. */
  match(method: string, path: string): ReturnType<JsonRouteTable["match"]> {
    return this.routes.match(method, path);
  }

  /**
   * One request of a JSON route, step by step: the call begins and is
   * authenticated from the headers alone (a bad token is answered without
   * reading the body), then the body is read, then the call runs.
   */
  async handle(found: RouteMatch, req: NodeRequest, res: NodeResponse, requestId: string): Promise<void> {
    const cancellation = new CallCancellation();
    const call = this.pipeline.begin(found.route.served, {
      protocol: "json",
      authorization: firstHeader(req.headers.authorization),
      requestId,
      cancellation,
      traceCarrier: req.headers,
      route: found.route,
      idempotencyKey: firstHeader(req.headers[IDEMPOTENCY_KEY_HEADER]),
    });
    if (!(await authenticated(call, req, res, requestId))) return;
    const body = await this.readRequestBody(found, req, res, requestId);
    if (body.kind === "answered") {
      call.abandon(unrunStatus(body.failure));
      return;
    }
    cancelOnClose(res, cancellation);
    await runCall(found, call, body.bytes, req, res, requestId);
  }

  /** The JSON body of a route that has one (Content-Type and size checked); none for GET and DELETE. */
  private async readRequestBody(
    found: RouteMatch,
    req: NodeRequest,
    res: NodeResponse,
    requestId: string,
  ): Promise<BodyRead> {
    if (!found.route.hasBody) {
      req.resume(); // a body sent anyway is not read
      return { kind: "ok", bytes: undefined };
    }
    if (!JSON_CONTENT_TYPE.test(req.headers["content-type"] ?? "")) {
      const failure = { kind: "unsupported_media_type" } as const;
      reply(sayingRequestId(res, requestId), transportError(failure));
      return { kind: "answered", failure };
    }
    const body = await readBody(req, this.maxBodyBytes);
    if (body.kind === "too-large") {
      // Unread bytes may still be on the wire: do not reuse an HTTP/1.1 connection.
      closeAfterAnswer(req, res);
      const failure = { kind: "body_too_large", limit: this.maxBodyBytes } as const;
      reply(sayingRequestId(res, requestId), transportError(failure));
      return { kind: "answered", failure };
    }
    if (body.kind === "aborted") return { kind: "answered", failure: "gone" };
    return { kind: "ok", bytes: body.bytes };
  }
}

/** Authenticates the call from the headers; a refused one is answered here, its body left unread. */
async function authenticated(
  call: UnaryCall | StreamCall,
  req: NodeRequest,
  res: NodeResponse,
  requestId: string,
): Promise<boolean> {
  try {
    await call.authenticate();
    return true;
  } catch (e) {
    leaveBodyUnread(req, res);
    reply(sayingRequestId(res, requestId), toJsonError(e));
    return false;
  }
}

/** Runs an authenticated call: its JSON answer, or its event stream once the first message is there. */
async function runCall(
  found: RouteMatch,
  call: UnaryCall | StreamCall,
  bytes: Uint8Array | undefined,
  req: NodeRequest,
  res: NodeResponse,
  requestId: string,
): Promise<void> {
  const { served } = found.route;
  const params = isStream(served) ? withLastEventId(served, found.params, req) : found.params;
  const readRequest = () =>
    bytes === undefined
      ? requestFromPath(served.method.input, params)
      : parseJsonRequest(served.method.input, bytes, params);
  try {
    if (isStream(served)) {
      compactRequestId(requestId);
      const messages = await (call as StreamCall).runStream(readRequest);
      dropHeaders(req); // all read by now (the call's context, Last-Event-ID); the stream may last hours
      // Not awaited: a watch lives long, and this function's frame, its promise and its caller's
      // reactions would live with it. The writer calls back when the answer has ended.
      writeEventStream(res, requestId, served.method.output, messages, served.resume?.eventId, stopCancelling);
      return;
    }
    const output = await (call as UnaryCall).run(readRequest);
    stopCancelling(res);
    reply(res, {
      status: 200,
      body: toJsonString(served.method.output, output, { useProtoFieldName: true, alwaysEmitImplicit: true }),
    });
  } catch (e) {
    stopCancelling(res);
    reply(sayingRequestId(res, requestId), toJsonError(e));
  }
}

/**
 * The client going away (the answer closing before it ends) cancels the call, until
 * `stopCancelling`. One listener for every answer, and each answer's cancellation in a weak map,
 * rather than a closure per request: a watch keeps them for hours.
 */
function cancelOnClose(res: NodeResponse, cancellation: CallCancellation): void {
  cancellations.set(res, cancellation);
  res.on("close", cancelCall); // fires once; `once` would keep a wrapper as long as a watch lives
}

const cancellations = new WeakMap<NodeResponse, CallCancellation>();

function cancelCall(this: NodeResponse): void {
  cancellations.get(this)?.abort();
}

function stopCancelling(res: NodeResponse): void {
  cancellations.delete(res);
  res.off("close", cancelCall);
}

/**
 * A stream a client resumes (`ServedStream.resume`): a non-empty
 * `Last-Event-ID` header — what an EventSource-style client sends when it
 * reconnects, with the request it first made — is the resume field, over the
 * body's (the body still holds where the first request started).
 */
function withLastEventId(
  served: ServedStream,
  params: Readonly<Record<string, string>>,
  req: NodeRequest,
): Readonly<Record<string, string>> {
  const lastEventId = firstHeader(req.headers["last-event-id"]);
  if (served.resume === undefined || lastEventId === undefined || lastEventId === "") return params;
  return { ...params, [served.resume.field]: lastEventId };
}
